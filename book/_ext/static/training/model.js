/* The package's plain Transformer (transformer/model.py, attention.py, layers.py,
 * embedding.py, positional.py, feedforward.py) written once more in TensorFlow.js, so a
 * reader can train it in the page. Post-norm layers (section 3.1), shared source, target
 * and pre-softmax weights (3.4), sinusoidal positions (3.5) or none, no dropout.
 *
 * Parameters are named as the PyTorch model's state_dict names them and stored as it
 * stores them (a linear map's weight is (out, in)), so weights exported from PyTorch load
 * as they are: tests/test_page_training.py compares the loss and every gradient with
 * PyTorch's. The toy tasks have no padding (every sequence has the same length), so the
 * only mask is the decoder's causal one (3.2.3).
 *
 * Runs where `tf` (tfjs-core with a backend) is a global: in the panel's Web Worker; taskBatch
 * and rng need no TensorFlow.js (tests/js/training.test.js).
 */
/* global tf */
export const PAD = 0, BOS = 1, EOS = 2;                      // transformer/config.py's ids
export const SPECIALS = 4;                                    // <pad> <bos> <eos> <unk>

/* A model's settings, with the package's ModelConfig defaults for what the panel
 * does not choose. */
export function modelConfig(o) {
  const cfg = Object.assign({vocab: SPECIALS + 10, d_model: 64, n_heads: 4, d_ff: 128,
                             n_encoder_layers: 2, n_decoder_layers: 2,
                             positional: "sinusoidal", max_len: 32, eps: 1e-5}, o);
  if (cfg.d_model % cfg.n_heads) throw new Error(`d_model=${cfg.d_model} is not divisible by n_heads=${cfg.n_heads}`);
  if (!["sinusoidal", "none"].includes(cfg.positional)) throw new Error(`positional must be 'sinusoidal' or 'none', got ${cfg.positional}`);
  cfg.d_k = cfg.d_model / cfg.n_heads;
  return cfg;
}

/* Every parameter's name and shape, as PyTorch's named_parameters() gives them: the one
 * matrix shared by the two embeddings and the pre-softmax map (3.4) is "output_weight"
 * there (it is also src_embed.weight and tgt_embed.weight). */
export function parameterShapes(cfg) {
  const d = cfg.d_model, shapes = [["output_weight", [cfg.vocab, d]]];
  const linear = (name, out, inp) => shapes.push([`${name}.weight`, [out, inp]], [`${name}.bias`, [out]]);
  const attention = (name) => ["q_proj", "k_proj", "v_proj", "out_proj"].forEach((p) => linear(`${name}.${p}`, d, d));
  const norm = (name) => shapes.push([`${name}.norm.weight`, [d]], [`${name}.norm.bias`, [d]]);
  const ff = (name) => { linear(`${name}.feed_forward.linear1`, cfg.d_ff, d); linear(`${name}.feed_forward.linear2`, d, cfg.d_ff); };
  for (let i = 0; i < cfg.n_encoder_layers; i++) {
    const l = `encoder_layers.${i}`;
    attention(`${l}.self_attn`); ff(l); norm(`${l}.attn_block`); norm(`${l}.ff_block`);
  }
  for (let i = 0; i < cfg.n_decoder_layers; i++) {
    const l = `decoder_layers.${i}`;
    attention(`${l}.self_attn`); attention(`${l}.cross_attn`); ff(l);
    norm(`${l}.self_block`); norm(`${l}.cross_block`); norm(`${l}.ff_block`);
  }
  return shapes;
}

let made = 0;                                          // tfjs variable names are global
/* The parameters as tf.Variables: from `weights` ({name: flat array}) when given, else
 * initialised as Transformer._init_weights does (Xavier-uniform linear maps, zero
 * biases, unit norms, embedding N(0, d_model^-0.5)), from `seed`. */
function makeParams(cfg, weights, seed) {
  const params = {}, tag = `m${made++}`;
  let s = seed || 0;
  for (const [name, shape] of parameterShapes(cfg)) {
    let value;
    if (weights) {
      if (!weights[name]) throw new Error(`no weights for ${name}`);
      const size = shape.reduce((a, b) => a * b, 1);
      if (weights[name].length !== size) throw new Error(`${name}: ${weights[name].length} values, expected ${shape.join("x")}`);
      value = tf.tensor(weights[name], shape, "float32");
    } else if (name === "output_weight") {                     // TokenEmbedding's init
      value = tf.randomNormal(shape, 0, cfg.d_model ** -0.5, "float32", ++s);
    } else if (name.endsWith("norm.weight")) {
      value = tf.ones(shape);
    } else if (name.endsWith(".bias")) {
      value = tf.zeros(shape);
    } else {
      const bound = Math.sqrt(6 / (shape[0] + shape[1]));           // xavier_uniform_
      value = tf.randomUniform(shape, -bound, bound, "float32", ++s);
    }
    params[name] = tf.variable(value, true, `${tag}/${name}`);
    value.dispose();
  }
  return params;
}

/* The (max_len, d_model) table of section 3.5: sine on even, cosine on odd dimensions. */
function sinusoidal(maxLen, d) {
  const table = new Float32Array(maxLen * d);
  for (let pos = 0; pos < maxLen; pos++) {
    for (let i = 0; i < d; i += 2) {
      const angle = pos / Math.pow(10000, i / d);
      table[pos * d + i] = Math.sin(angle);
      table[pos * d + i + 1] = Math.cos(angle);
    }
  }
  return tf.tensor2d(table, [maxLen, d]);
}

export class PageTransformer {
  constructor(cfg, weights, seed) {
    this.cfg = modelConfig(cfg);
    this.params = makeParams(this.cfg, weights, seed);
    this.table = this.cfg.positional === "sinusoidal" ? sinusoidal(this.cfg.max_len, this.cfg.d_model) : null;
    this.causal = {};                                    // additive masks by length
  }

  variables() { return Object.values(this.params); }

  dispose() {
    this.variables().forEach((v) => v.dispose());
    if (this.table) this.table.dispose();
    Object.values(this.causal).forEach((m) => m.dispose());
  }

  linear(x, name) {                                      // x (..., in) -> (..., out)
    const p = this.params, w = p[`${name}.weight`];
    const flat = tf.reshape(x, [-1, w.shape[1]]);
    const y = tf.add(tf.matMul(flat, w, false, true), p[`${name}.bias`]);
    return tf.reshape(y, [...x.shape.slice(0, -1), w.shape[0]]);
  }

  layerNorm(x, name) {                                   // nn.LayerNorm over d_model
    const {mean, variance} = tf.moments(x, -1, true);
    const normed = tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, this.cfg.eps)));
    return tf.add(tf.mul(normed, this.params[`${name}.weight`]), this.params[`${name}.bias`]);
  }

  /* MultiHeadAttention (3.2.2); `mask` is additive (0 or -1e9), broadcast to the scores.
   * Returns [output (B, q, d_model), weights (B, h, q, k)]. */
  attention(query, memory, name, mask) {
    const {n_heads: h, d_k} = this.cfg;
    const split = (x) => tf.transpose(tf.reshape(x, [x.shape[0], x.shape[1], h, d_k]), [0, 2, 1, 3]);
    const q = split(this.linear(query, `${name}.q_proj`));
    const k = split(this.linear(memory, `${name}.k_proj`));
    const v = split(this.linear(memory, `${name}.v_proj`));
    let scores = tf.div(tf.matMul(q, k, false, true), Math.sqrt(d_k));     // equation (1)
    if (mask) scores = tf.add(scores, mask);
    const weights = tf.softmax(scores);
    const heads = tf.transpose(tf.matMul(weights, v), [0, 2, 1, 3]);          // (B, q, h, d_k)
    const merged = tf.reshape(heads, [query.shape[0], query.shape[1], h * d_k]);
    return [this.linear(merged, `${name}.out_proj`), weights];
  }

  feedForward(x, name) {                                 // equation (2)
    return this.linear(tf.relu(this.linear(x, `${name}.linear1`)), `${name}.linear2`);
  }

  /* (B, L) int32 -> (B, L, d_model). A one-hot product rather than a gather: its
   * gradient needs no UnsortedSegmentSum, which the WebAssembly backend lacks. */
  embed(ids) {
    const [B, L] = ids.shape, V = this.cfg.vocab, d = this.cfg.d_model;
    const rows = tf.matMul(tf.cast(tf.oneHot(tf.reshape(ids, [-1]), V), "float32"), this.params.output_weight);
    const x = tf.mul(tf.reshape(rows, [B, L, d]), Math.sqrt(d));
    return this.table ? tf.add(x, tf.slice(this.table, [0, 0], [L, d])) : x;
  }

  causalMask(t) {
    if (!this.causal[t]) {
      const m = new Float32Array(t * t);
      for (let i = 0; i < t; i++) for (let j = i + 1; j < t; j++) m[i * t + j] = -1e9;
      this.causal[t] = tf.keep(tf.tensor2d(m, [t, t]));
    }
    return this.causal[t];
  }

  /* src (B, S), tgtIn (B, T) int32 -> logits (B, T, vocab); with `record`, every
   * attention's weights go into record[kind][layer] ("encoder.self", "decoder.self",
   * "decoder.cross"), as transformer.recording.record_attention names them. */
  forward(src, tgtIn, record) {
    const keep = (kind, i, w) => { if (record) (record[kind] = record[kind] || [])[i] = w; };
    let x = this.embed(src), w;
    for (let i = 0; i < this.cfg.n_encoder_layers; i++) {
      const l = `encoder_layers.${i}`;
      let a;
      [a, w] = this.attention(x, x, `${l}.self_attn`, null); keep("encoder.self", i, w);
      x = this.layerNorm(tf.add(x, a), `${l}.attn_block.norm`);
      x = this.layerNorm(tf.add(x, this.feedForward(x, `${l}.feed_forward`)), `${l}.ff_block.norm`);
    }
    const mask = this.causalMask(tgtIn.shape[1]);
    let y = this.embed(tgtIn);
    for (let i = 0; i < this.cfg.n_decoder_layers; i++) {
      const l = `decoder_layers.${i}`;
      let a;
      [a, w] = this.attention(y, y, `${l}.self_attn`, mask); keep("decoder.self", i, w);
      y = this.layerNorm(tf.add(y, a), `${l}.self_block.norm`);
      [a, w] = this.attention(y, x, `${l}.cross_attn`, null); keep("decoder.cross", i, w);
      y = this.layerNorm(tf.add(y, a), `${l}.cross_block.norm`);
      y = this.layerNorm(tf.add(y, this.feedForward(y, `${l}.feed_forward`)), `${l}.ff_block.norm`);
    }
    const flat = tf.reshape(y, [-1, this.cfg.d_model]);      // pre-softmax map = embedding (3.4)
    return tf.reshape(tf.matMul(flat, this.params.output_weight, false, true),
                      [tgtIn.shape[0], tgtIn.shape[1], this.cfg.vocab]);
  }

  /* The mean cross-entropy per target token (LabelSmoothingLoss with smoothing 0). */
  loss(src, tgtIn, tgtOut) {
    const logits = this.forward(src, tgtIn);
    const logp = tf.logSoftmax(tf.reshape(logits, [-1, this.cfg.vocab]));
    const picked = tf.mul(logp, tf.cast(tf.oneHot(tf.reshape(tgtOut, [-1]), this.cfg.vocab), "float32"));
    return tf.div(tf.neg(tf.sum(picked)), tgtOut.size);
  }
}

/* ---------------------------------------------------------------- the toy tasks */
export const TASKS = {
  copy: (s) => s.slice(),
  reverse: (s) => s.slice().reverse(),
  sort: (s) => s.slice().sort((a, b) => a - b),
};

export function rng(seed) {                                   // mulberry32: a seeded generator
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/* `size` random sequences of `length` symbols (ids SPECIALS..SPECIALS+symbols-1) and their
 * targets: {src, tgtIn (<bos> + target), tgtOut (target + <eos>)} as flat Int32Arrays. */
export function taskBatch(task, size, length, symbols, random) {
  const src = new Int32Array(size * length);
  const tgtIn = new Int32Array(size * (length + 1)), tgtOut = new Int32Array(size * (length + 1));
  for (let b = 0; b < size; b++) {
    const s = Array.from({length}, () => SPECIALS + Math.floor(random() * symbols));
    const t = TASKS[task](s);
    src.set(s, b * length);
    tgtIn.set([BOS, ...t], b * (length + 1));
    tgtOut.set([...t, EOS], b * (length + 1));
  }
  return {src, tgtIn, tgtOut, size, length};
}
