// The training panel's toy tasks (training/model.js): no TensorFlow.js needed for them.
import {test} from "node:test";
import assert from "node:assert/strict";
import {BOS, EOS, SPECIALS, rng, taskBatch} from "../../book/_ext/static/training/model.js";

test("a reversal batch: <bos> + the reversed source in, the reversed source + <eos> out", () => {
  const b = taskBatch("reverse", 3, 8, 10, rng(1));
  for (let i = 0; i < 3; i++) {
    const src = Array.from(b.src.slice(i * 8, i * 8 + 8));
    assert.ok(src.every((s) => s >= SPECIALS && s < SPECIALS + 10));
    assert.deepEqual(Array.from(b.tgtIn.slice(i * 9, i * 9 + 9)), [BOS, ...src.slice().reverse()]);
    assert.deepEqual(Array.from(b.tgtOut.slice(i * 9, i * 9 + 9)), [...src.slice().reverse(), EOS]);
  }
});

test("the generator is seeded", () => {
  const a = rng(7), b = rng(7);
  assert.deepEqual([a(), a(), a()], [b(), b(), b()]);
  assert.deepEqual(Array.from(taskBatch("sort", 2, 8, 10, rng(3)).tgtOut.slice(0, 9)).slice(0, 8),
                   Array.from(taskBatch("sort", 2, 8, 10, rng(3)).src.slice(0, 8)).sort((x, y) => x - y));
});
