// The parity test's worker (tests/test_page_training.py): the training panel's model and
// TensorFlow.js, asked for what the panel's own worker never answers. The test serves it
// beside the panel's worker, at _static/book/training/parity_worker.js, so that its
// imports are the staged page code's.
//   load {files, base}                       TensorFlow.js, as the panel's worker loads it
//   gradients {config, weights, batch}       the loss and every gradient
//   steps {config, weights, batches, lr}     the losses of Adam steps
import {serve} from "../lib/worker_server.js";
import * as P from "./model.js";
import {load, tensors} from "./tfjs.js";

function gradients({config, weights, batch}) {
  const m = new P.PageTransformer(config, weights);
  const [src, tgtIn, tgtOut] = tensors(batch);
  const {value, grads} = tf.variableGrads(() => m.loss(src, tgtIn, tgtOut), m.variables());
  const named = {};
  for (const [name, v] of Object.entries(m.params)) named[name] = Array.from(grads[v.name].dataSync());
  const loss = value.dataSync()[0];
  tf.dispose([value, ...Object.values(grads), src, tgtIn, tgtOut]);
  m.dispose();
  return {loss, grads: named};
}

function steps({config, weights, batches, lr}) {
  const m = new P.PageTransformer(config, weights);
  const optimizer = tf.train.adam(lr, 0.9, 0.999, 1e-8);
  const losses = batches.map((b) => {
    const value = tf.tidy(() => {
      const [src, tgtIn, tgtOut] = tensors(b);
      return optimizer.minimize(() => m.loss(src, tgtIn, tgtOut), true, m.variables());
    });
    const loss = value.dataSync()[0];
    value.dispose();
    return loss;
  });
  optimizer.dispose();
  m.dispose();
  return {losses};
}

serve({load, gradients, steps});
