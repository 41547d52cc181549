/* The training panel's Web Worker (a module worker): TensorFlow.js, the page's model
 * (model.js) and the training loop, off the page's main thread.
 *
 * Requests (lib/worker_server.js), each answered by any number of {id, type: "progress" |
 * "maps"} then one {id, type: "done", ...} or {id, type: "error", message}:
 *   load {files, base}         fetch and start TensorFlow.js (tfjs.js)
 *   train {settings}           a new model, trained until its sequence accuracy on 500
 *                              held-out sequences reaches settings.target, or
 *                              settings.max_steps; the note "stop" ends it at the next step
 *   run {symbols}              the trained model's greedy output and its attention maps
 */
/* global tf */
import {serve} from "../lib/worker_server.js";
import * as P from "./model.js";
import {load, tensors} from "./tfjs.js";

let model = null, settings = null, stopping = false;

/* Share of `batch`'s sequences whose every target token is the argmax under teacher
 * forcing: the same as exact greedy decoding (a correct prefix is fed back either way). */
function sequenceAccuracy(batch) {
  const right = tf.tidy(() => {
    const [src, tgtIn, tgtOut] = tensors(batch);
    const hit = tf.cast(tf.equal(tf.argMax(model.forward(src, tgtIn), -1), tgtOut), "int32");
    return tf.sum(tf.cast(tf.equal(tf.sum(hit, 1), batch.length + 1), "int32"));
  });
  const n = right.dataSync()[0];
  right.dispose();
  return n / batch.size;
}

/* Every attention map of one example: {kind: [layer][head] -> flat (q x k) weights}. */
function attentionMaps(src, tgtIn) {
  const record = {};
  const out = {};
  tf.tidy(() => {
    const logits = model.forward(src, tgtIn, record);
    out.argmax = Array.from(tf.argMax(logits, -1).dataSync());
    for (const [kind, layers] of Object.entries(record)) {
      out[kind] = layers.map((w) => {                     // (1, h, q, k)
        const [, h, q, k] = w.shape, data = w.dataSync();
        return Array.from({length: h}, (_, i) => Array.from(data.subarray(i * q * k, (i + 1) * q * k)));
      });
    }
  });
  return out;
}

function exampleMaps(example) {
  const src = tf.tensor2d(example.src, [1, example.length], "int32");
  const tgtIn = tf.tensor2d(example.tgtIn, [1, example.length + 1], "int32");
  const maps = attentionMaps(src, tgtIn);
  src.dispose(); tgtIn.dispose();
  return maps;
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 0));

async function train(reply, s) {
  if (model) model.dispose();
  settings = s;
  stopping = false;
  model = new P.PageTransformer({vocab: P.SPECIALS + s.symbols, d_model: s.d_model, n_heads: s.n_heads,
                                 d_ff: 2 * s.d_model, n_encoder_layers: s.layers, n_decoder_layers: s.layers,
                                 positional: s.positional, max_len: s.length + 1}, null, s.seed);
  const optimizer = tf.train.adam(s.lr, 0.9, 0.999, 1e-8);
  const random = P.rng(s.seed + 1);
  const held = P.taskBatch(s.task, 500, s.length, s.symbols, P.rng(12345));
  const example = P.taskBatch(s.task, 1, s.length, s.symbols, P.rng(s.example_seed || 3));
  const variables = model.variables();
  const start = performance.now();
  let accuracy = 0, loss = NaN, step = 0, reached = null;
  reply.post("maps", {step: 0, maps: exampleMaps(example), example});
  while (step < s.max_steps && !stopping) {
    step++;
    const batch = P.taskBatch(s.task, s.batch, s.length, s.symbols, random);
    const value = tf.tidy(() => {
      const [src, tgtIn, tgtOut] = tensors(batch);
      return optimizer.minimize(() => model.loss(src, tgtIn, tgtOut), true, variables);
    });
    if (step % s.report_every === 0 || step === s.max_steps) {
      loss = value.dataSync()[0];
      if (step % s.eval_every === 0 || step === s.max_steps) {
        accuracy = sequenceAccuracy(held);
        if (accuracy >= s.target && reached === null) reached = {step, seconds: (performance.now() - start) / 1000};
      }
      reply.post("progress", {step, loss, accuracy, seconds: (performance.now() - start) / 1000});
      if (step % s.maps_every === 0) reply.post("maps", {step, maps: exampleMaps(example), example});
      value.dispose();
      if (reached) break;
      await pause();                                     // let "stop" arrive
    } else {
      value.dispose();
    }
  }
  optimizer.dispose();
  reply.post("maps", {step, maps: exampleMaps(example), example});
  return {step, loss, accuracy, reached, seconds: (performance.now() - start) / 1000,
          stopped: stopping, parameters: variables.reduce((n, v) => n + v.size, 0)};
}

function run({symbols}) {
  if (!model) throw new Error("train a model first");
  const L = settings.length;
  if (symbols.length !== L) throw new Error(`type exactly ${L} symbols (got ${symbols.length})`);
  const src = Int32Array.from(symbols, (c) => P.SPECIALS + c);
  const out = [P.BOS];
  for (let t = 0; t < L + 1; t++) {                      // greedy decoding, L symbols + <eos>
    const next = tf.tidy(() => {
      const logits = model.forward(tf.tensor2d(src, [1, L], "int32"), tf.tensor2d(out, [1, out.length], "int32"));
      return tf.argMax(tf.slice(logits, [0, out.length - 1, 0], [1, 1, -1]), -1).dataSync()[0];
    });
    out.push(next);
  }
  const tgtIn = out.slice(0, L + 1);
  const maps = exampleMaps({src, tgtIn: Int32Array.from(tgtIn), length: L});
  return {output: out.slice(1), maps, src: Array.from(src), tgtIn};
}

serve({load, run, train: ({settings}, reply) => train(reply, settings)},
      {notes: {stop: () => { stopping = true; }}});
