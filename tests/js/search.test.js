// The page's search loops (translator/search.js) give the ids of the package's
// greedy_decode and beam_search on the same stand-in model (tests/page_search_model.py
// wrote fixtures/search.json; tests/test_page_code.py keeps it current).
import {test} from "node:test";
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {beam, greedy, lengthPenalty, logSoftmax, maxLength, nextLogProbs} from "../../book/_ext/static/translator/search.js";

const fixture = JSON.parse(readFileSync(new URL("fixtures/search.json", import.meta.url)));

/* tests/page_search_model.py's logits, in float64 */
function logits(prefix, source) {
  const t = prefix.length, last = prefix[t - 1], total = source.reduce((a, b) => a + b, 0);
  return Array.from({length: fixture.vocab}, (_, v) =>
    2.5 * Math.sin(1.3 * v + 0.7 * t + 0.37 * last + 0.11 * total) + (v === 2 ? 0.12 * t * t - 1.0 : 0));
}

function standIn(decoding) {
  let steps = 0;
  return {
    cfg: {tgt_vocab_size: fixture.vocab, max_len: fixture.max_len},
    ids: {pad: 0, bos: 1, eos: 2, unk: 3},
    decoding,
    encode: async (src) => src,
    step: async (prefixes, memory, src) => {
      steps += 1;
      return Float64Array.from(prefixes.flatMap((p) => logits(p, src)));
    },
    get steps() { return steps; },
  };
}

for (const c of fixture.cases) {
  test(`${c.search} ${c.beam_size || ""} alpha ${c.alpha} max_extra ${c.max_extra} gives the package's ids`, async () => {
    const model = standIn({beam_size: c.beam_size || 1, alpha: c.alpha || 0, max_extra: c.max_extra});
    const got = [];
    for (const source of fixture.sources) {
      const src = source.concat([2]);                     // EOS, as build_source_batch
      got.push(c.search === "greedy" ? await greedy(model, src) : await beam(model, src));
    }
    assert.deepEqual(got, c.ids);
  });
}

test("each step is reported with the best hypothesis so far", async () => {
  const model = standIn({beam_size: 4, alpha: 0.6, max_extra: 50});
  const seen = [];
  await beam(model, [5, 6, 7, 8, 4, 2], async (ids) => { seen.push(ids.length); });
  assert.ok(seen.length >= 2);
  assert.deepEqual(seen, seen.map((_, i) => i + 1));
});

test("a throwing onStep stops the search (the worker cancels this way)", async () => {
  const model = standIn({beam_size: 4, alpha: 0.6, max_extra: 50});
  await assert.rejects(greedy(model, [5, 6, 7, 8, 4, 2], async () => { throw new Error("cancelled"); }),
                       /cancelled/);
});

test("the length penalty and log-softmax are the package's", () => {
  assert.equal(lengthPenalty(1, 0.6), 1);
  assert.ok(Math.abs(lengthPenalty(7, 0.6) - Math.pow(2, 0.6)) < 1e-12);
  const lp = logSoftmax([1, 2, 3], 0, 3);
  assert.ok(Math.abs(lp.reduce((a, b) => a + Math.exp(b), 0) - 1) < 1e-12);
  assert.ok(Math.abs(lp[2] - (3 - Math.log(Math.exp(1) + Math.exp(2) + Math.exp(3)))) < 1e-12);
});

/* A model whose logits are next(prefix) (BOS first), the same for every source; ids as
   the package's (pad 0, bos 1, eos 2). */
function tableModel(next, {vocab = 6, maxLen = 32, decoding = {beam_size: 1, alpha: 0, max_extra: 50}} = {}) {
  let steps = 0;
  const seen = [];                                        // the prefixes of each step
  return {
    cfg: {tgt_vocab_size: vocab, max_len: maxLen},
    ids: {pad: 0, bos: 1, eos: 2, unk: 3},
    decoding,
    encode: async (src) => src,
    step: async (prefixes) => {
      steps += 1;
      seen.push(prefixes.map((p) => p.slice()));
      return Float64Array.from(prefixes.flatMap(next));
    },
    get steps() { return steps; },
    seen,
  };
}

test("log-softmax subtracts the largest logit first and reads its own row", () => {
  // exp(1000) overflows: only max + log(sum(exp(x - max))) gives the exact [0, -1000]
  assert.deepEqual(Array.from(logSoftmax([1000, 0], 0, 2)), [0, -1000]);
  assert.deepEqual(Array.from(logSoftmax([0, 1000], 0, 2)), [-1000, 0]);
  // the second row of [50 50 | 1 2 3] is the row [1 2 3]
  assert.deepEqual(Array.from(logSoftmax([50, 50, 1, 2, 3], 2, 3)), Array.from(logSoftmax([1, 2, 3], 0, 3)));
});

test("the next token's log-probabilities: PAD and BOS never, EOS not first", () => {
  const model = tableModel(null, {vocab: 4});
  // row 1 of two: exp of the logits [1 1 1 3], summing to 6, before any token is banned
  const rows = [5, 5, 5, 5, 0, 0, 0, Math.log(3)];
  const later = nextLogProbs(model, rows, 1, false);
  assert.deepEqual(Array.from(later.slice(0, 2)), [-Infinity, -Infinity]);
  assert.ok(Math.abs(later[2] - Math.log(1 / 6)) < 1e-12 && Math.abs(later[3] - Math.log(1 / 2)) < 1e-12);
  const first = nextLogProbs(model, rows, 1, true);
  assert.deepEqual(Array.from(first.slice(0, 3)), [-Infinity, -Infinity, -Infinity]);
  assert.ok(Math.abs(first[3] - Math.log(1 / 2)) < 1e-12);
});

test("the longest output: source length + max_extra, at most max_len - 1", () => {
  const model = tableModel(null, {maxLen: 5, decoding: {beam_size: 1, alpha: 0, max_extra: 2}});
  assert.equal(maxLength(model, [7]), 3);
  assert.equal(maxLength(model, [7, 8, 9, 2]), 4);
});

test("greedy: the first of equal best tokens, stopping at its length limit", async () => {
  // 3 and 4 tie, above all else; EOS never wins: three tokens for a source of 2 + 1 extra
  const model = tableModel(() => [0, 0, -5, 4, 4, 1], {decoding: {beam_size: 1, alpha: 0, max_extra: 1}});
  assert.deepEqual(await greedy(model, [7, 2]), [3, 3, 3]);
  assert.equal(model.steps, 3);
});

test("greedy: EOS is not the first token, and ends the output after it", async () => {
  const model = tableModel(() => [9, 9, 8, 1, 0, 0]);   // PAD and BOS banned, EOS best
  assert.deepEqual(await greedy(model, [7, 2]), [3]);
  assert.equal(model.steps, 2);
});

test("greedy with no room for a token (max_len 1) runs no decoder step", async () => {
  const model = tableModel(() => [0, 0, 0, 1, 0, 0], {maxLen: 1});
  assert.deepEqual(await greedy(model, [7, 2]), []);
  assert.equal(model.steps, 0);
});

test("greedy reports each step's output so far, without BOS", async () => {
  const model = tableModel(() => [0, 0, -5, 4, 1, 1], {decoding: {beam_size: 1, alpha: 0, max_extra: 1}});
  const seen = [];
  assert.deepEqual(await greedy(model, [7, 2], async (ids) => { seen.push(ids); }), [3, 3, 3]);
  assert.deepEqual(seen, [[3], [3, 3]]);                  // not after the last token
});

// The beams below were worked out by hand; the package's beam_search keeps the same ones
// on the same logits (its decoder is handed the same prefixes, step by step).
const beamOf = (k, alpha, maxExtra) => ({beam_size: k, alpha, max_extra: maxExtra});

test("beam keeps the best 2k extensions: an EOS ranked third is not finished, the fourth lives", async () => {
  // step 0: [3] (20) and [4] (8) live. step 1, with [3]: EOS +20, 3 +12, 5 +2, 4 +0; with
  // [4]: EOS +20, 5 +8, 4 +4, 3 +2. Ranked: [3]EOS 40, [3 3] 32, [4]EOS 28, [3 5] 22,
  // [3 4] 20, [4 5] 16, ...: [3] finishes (rank 0 < k), [4]EOS (rank 2) does not, and the
  // live beams are ranks 1 and 3. Step 2: [3 3]EOS ranks first (52 against [3 3 3] 44)
  // and finishes; [3], at 40 - 2 logsumexp, beats [3 3] at 52 - 3 logsumexp (above 12).
  const rows = {"1": [2, 4, 12, 20, 8, 0], "1,3": [8, 4, 20, 12, 0, 2], "1,4": [12, 0, 20, 2, 4, 8]};
  const model = tableModel((p) => rows[p.join()] || [0, 0, 20, 12, 8, 4], {decoding: beamOf(2, 0, 50)});
  assert.deepEqual(await beam(model, [5, 2]), [3]);
  assert.deepEqual(model.seen, [[[1], [1]], [[1, 3], [1, 4]], [[1, 3, 3], [1, 3, 5]]]);
});

test("beam closes every hypothesis with EOS at the length limit", async () => {
  // EOS would only win after five tokens; a source of 2 + 1 extra stops it at three
  const model = tableModel((p) => [0, 0, p.length >= 6 ? 10 : -8, 3, 2, 0], {decoding: beamOf(2, 0, 1)});
  assert.deepEqual(await beam(model, [5, 2]), [3, 3, 3]);
  assert.equal(model.steps, 4);                           // three tokens, then EOS
  assert.ok(model.seen[3].every((p) => p.length === 4));
});

test("beam wider than the tokens on offer: one finite hypothesis, the others -Infinity", async () => {
  // a vocabulary of one real token (3) and a beam of 3: the second step finishes [3]
  const model = tableModel(() => [0, 0, 1, 0], {vocab: 4, decoding: beamOf(3, 0, 0)});
  assert.deepEqual(await beam(model, [3, 2]), [3]);
});

test("beam of one: EOS tied with a token is the first of equals, and finishes", async () => {
  const model = tableModel((p) => (p.length === 1 ? [0, 0, 0, 1, 0, 0] : [0, 0, 2, 2, 1, 0]),
                           {decoding: beamOf(1, 0, 50)});
  assert.deepEqual(await beam(model, [5, 2]), [3]);
  assert.equal(model.steps, 2);
});

test("beam: of finished hypotheses with equal scores, the first found wins", async () => {
  // 3 and 4 tie at the first step, and EOS follows each with the same log-probability:
  // [3] and [4] finish together with equal scores, [3] ranked first
  const model = tableModel((p) => (p.length === 1 ? [0, 0, 0, 2, 2, 1] : [0, 0, 5, 0, 0, 0]),
                           {decoding: beamOf(2, 0, 50)});
  assert.deepEqual(await beam(model, [5, 2]), [3]);
  assert.equal(model.steps, 2);
});
