/* The paper's search (section 6.1) over a model's next-token log-probabilities: the loops
 * of transformer/decoding.py, step for step (tests/js/search.test.js holds them to ids
 * that greedy_decode and beam_search give on the same stand-in model).
 *
 * greedy, and beam search with the GNMT length penalty and the "count" stopping rule (a
 * sentence is done once it has beam_size finished hypotheses, or at its maximum length,
 * source length + max_extra); PAD and BOS are never generated, nor EOS as the first token.
 *
 * `model`: {cfg: {tgt_vocab_size, max_len}, ids: {pad, bos, eos}, decoding: {beam_size,
 * alpha, max_extra}, encode(src) -> memory, step(prefixes, memory, src) -> logits (rows x
 * V, row-major)}. onStep(ids so far) is awaited after each decoder step (progress,
 * cancelling). */

export function lengthPenalty(length, alpha) {
  return Math.pow((5 + length) / 6, alpha);
}

/* log_softmax of one row of logits, in float64. */
export function logSoftmax(logits, offset, V) {
  let max = -Infinity;
  for (let v = 0; v < V; v++) max = Math.max(max, logits[offset + v]);
  let sum = 0;
  for (let v = 0; v < V; v++) sum += Math.exp(logits[offset + v] - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(V);
  for (let v = 0; v < V; v++) out[v] = logits[offset + v] - lse;
  return out;
}

/* Log-probabilities of the next token (transformer.decoding._next_log_probs). */
export function nextLogProbs(model, logits, row, firstStep) {
  const V = model.cfg.tgt_vocab_size;
  const lp = logSoftmax(logits, row * V, V);
  lp[model.ids.pad] = -Infinity;
  lp[model.ids.bos] = -Infinity;
  if (firstStep) lp[model.ids.eos] = -Infinity;          // minimum output length 1
  return lp;
}

export function maxLength(model, src) {
  return Math.min(src.length + model.decoding.max_extra, model.cfg.max_len - 1);
}

export async function greedy(model, src, onStep = async () => {}) {
  const memory = await model.encode(src);
  const maxLen = maxLength(model, src), eos = model.ids.eos;
  const prefix = [model.ids.bos];
  for (let t = 0; maxLen > 0;) {
    const logits = await model.step([prefix], memory, src);
    const lp = nextLogProbs(model, logits, 0, prefix.length === 1);
    let token = 0;
    for (let v = 1; v < lp.length; v++) if (lp[v] > lp[token]) token = v;
    prefix.push(token);
    t += 1;
    if (token === eos || t >= maxLen) break;
    await onStep(prefix.slice(1));
  }
  const ids = prefix.slice(1);
  if (ids.length && ids[ids.length - 1] === eos) ids.pop();
  return ids;
}

export async function beam(model, src, onStep = async () => {}, k = model.decoding.beam_size,
                           alpha = model.decoding.alpha) {
  const memory = await model.encode(src);
  const V = model.cfg.tgt_vocab_size, eos = model.ids.eos;
  const maxLen = maxLength(model, src);
  let scores = [0].concat(Array(k - 1).fill(-Infinity));   // expand one beam at first
  let prefixes = Array.from({length: k}, () => [model.ids.bos]);
  const finished = [];                                        // [normalised score, ids]
  for (let t = 0; ;) {
    const logits = await model.step(prefixes, memory, src);
    const atLimit = t >= maxLen;
    // the 2k best extensions of all k beams, by raw log-probability
    const top = [];                                           // [score, beam, token]
    for (let j = 0; j < k; j++) {
      const lp = nextLogProbs(model, logits, j, prefixes[j].length === 1);
      if (atLimit) {                                          // close with EOS
        const e = lp[eos];
        lp.fill(-Infinity);
        lp[eos] = e;
      }
      for (let v = 0; v < V; v++) {
        const s = scores[j] + lp[v];
        if (top.length < 2 * k || s > top[top.length - 1][0]) {
          let i = top.length < 2 * k ? top.length : top.length - 1;
          if (top.length < 2 * k) top.push(null);
          while (i > 0 && top[i - 1][0] < s) { top[i] = top[i - 1]; i--; }
          top[i] = [s, j, v];
        }
      }
    }
    // finished: EOS extensions among the first k
    for (let i = 0; i < k; i++) {
      const [s, j, v] = top[i];
      if (v === eos && Number.isFinite(s)) {
        finished.push([s / lengthPenalty(t + 1, alpha), prefixes[j].slice(1)]);
      }
    }
    // live: the best k extensions that do not end in EOS
    const live = top.filter((c) => c[2] !== eos).concat(top.filter((c) => c[2] === eos))
      .slice(0, k);
    t += 1;
    if (atLimit || finished.length >= k) break;
    scores = live.map((c) => c[0]);
    prefixes = live.map(([, j, v]) => prefixes[j].concat([v]));
    await onStep(prefixes[0].slice(1));                       // the best live hypothesis
  }
  let best = finished[0];
  for (const f of finished) if (f[0] > best[0]) best = f;      // first of equals
  return best[1];
}
