/* The training panel's Web Worker (a module worker): TensorFlow.js, the page's model
 * (model.js) and the training loop, off the page's main thread.
 *
 * tfjs-core and its WebAssembly backend (one thread: a static site cannot send the
 * cross-origin isolation headers that threads need) are listed in the page with their
 * size, SHA-256 and part (data-files, written by book/_ext/page_training.py) and kept in
 * the Cache API under their SHA-256: a second visit downloads none of them. TensorFlow.js
 * is a script, not a module: imported from its bytes, it defines its global `tf`.
 *
 * Messages in: {id, type, ...}; out, for each id, any number of {id, type: "progress" |
 * "maps"} then one {id, type: "done", ...} or {id, type: "error", message}.
 *   load {files, base}         fetch and start TensorFlow.js
 *   train {settings}           a new model, trained until its sequence accuracy on 500
 *                              held-out sequences reaches settings.target, or
 *                              settings.max_steps; "stop" ends it at the next step
 *   run {symbols}              the trained model's greedy output and its attention maps
 *   gradients {config, weights, batch}       loss and every gradient (the parity test)
 *   steps {config, weights, batches, lr}     the losses of Adam steps (the parity test)
 */
/* global tf */
import {cachedBytes} from "../lib/cached_fetch.js";
import {partName} from "../lib/downloads.js";
import {hasSimd, requireWebAssembly} from "../lib/webassembly.js";
import * as P from "./model.js";

const CACHE = "attention-book-training";
let model = null, settings = null, stopping = false;

async function cachedBlobUrl(url, sha, type) {
  return URL.createObjectURL(new Blob([await cachedBytes(url, sha, {cache: CACHE})], {type}));
}

async function load({files, base}) {
  requireWebAssembly("the panel");
  const lib = files.tfjs;
  const fetchPart = (part, type) => {
    const name = partName(lib, part);
    return cachedBlobUrl(base + name, lib[name].sha256, type);
  };
  await import(await fetchPart("library", "text/javascript"));       // defines tf
  await import(await fetchPart("backend", "text/javascript"));       // adds tf.wasm
  const simd = hasSimd();
  const wasmUrl = await fetchPart(simd ? "wasm-simd" : "wasm", "application/wasm");
  tf.wasm.setWasmPaths({"tfjs-backend-wasm.wasm": wasmUrl, "tfjs-backend-wasm-simd.wasm": wasmUrl,
                        "tfjs-backend-wasm-threaded-simd.wasm": wasmUrl});
  if (!(await tf.setBackend("wasm"))) throw new Error("TensorFlow.js could not start its WebAssembly backend");
  await tf.ready();
  return {backend: tf.getBackend(), simd, version: tf.version_core};
}

function tensors(batch) {
  const {size, length} = batch;
  return [tf.tensor2d(batch.src, [size, length], "int32"),
          tf.tensor2d(batch.tgtIn, [size, length + 1], "int32"),
          tf.tensor2d(batch.tgtOut, [size, length + 1], "int32")];
}

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

async function train(id, s) {
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
  postMessage({id, type: "maps", step: 0, maps: exampleMaps(example), example});
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
      postMessage({id, type: "progress", step, loss, accuracy, seconds: (performance.now() - start) / 1000});
      if (step % s.maps_every === 0) postMessage({id, type: "maps", step, maps: exampleMaps(example), example});
      value.dispose();
      if (reached) break;
      await pause();                                     // let "stop" arrive
    } else {
      value.dispose();
    }
  }
  optimizer.dispose();
  postMessage({id, type: "maps", step, maps: exampleMaps(example), example});
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

/* ------------------------------------------------ the parity test's two requests */
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

const HANDLERS = {load, run, gradients, steps};

addEventListener("message", async (event) => {
  const {id, type} = event.data;
  if (type === "stop") { stopping = true; return; }
  try {
    const result = type === "train" ? await train(id, event.data.settings)
      : await HANDLERS[type](event.data);
    postMessage({id, type: "done", ...result});
  } catch (err) {
    postMessage({id, type: "error", message: String(err && err.message || err)});
  }
});
