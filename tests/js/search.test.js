// The page's search loops (translator/search.js) give the ids of the package's
// greedy_decode and beam_search on the same stand-in model (tests/page_search_model.py
// wrote fixtures/search.json; tests/test_page_code.py keeps it current).
import {test} from "node:test";
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {beam, greedy, lengthPenalty, logSoftmax} from "../../book/_ext/static/translator/search.js";

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
