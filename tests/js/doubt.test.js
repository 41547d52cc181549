// The page's doubt (translator/doubt.js): tests/test_doubt.py runs the same cases through
// the package's transformer.doubt and this file; here, the rule's thresholds.
import {test} from "node:test";
import assert from "node:assert/strict";
import {doubt} from "../../book/_ext/static/translator/doubt.js";

const UNK = 3;
const loop = (text, pieces) => /\(a loop\)/.test(doubt([5, 6], UNK, text, pieces) || "");

test("half the pieces unknown", () => {
  assert.match(doubt([UNK, 900], UNK, "Ein Hund."), /2 pieces/);
  assert.equal(doubt([UNK, 900, 901], UNK, "Ein Hund."), null);
});

test("a word or a pair three times, a longer run twice", () => {
  assert.ok(loop("Hund Hund Hund"));
  assert.ok(!loop("sehr, sehr gut"));
  assert.ok(loop("a b a b a b"));
  assert.ok(!loop("a b a b a"));
  assert.ok(loop("über den Kreis über den Kreis."));
  assert.ok(!loop("über den Kreis über den Berg."));
  assert.ok(loop("Hund. Hund! Hund?"));
});

test("a sub-word piece three times inside a word", () => {
  const pieces = ["▁beim", "▁Wer", "b", "end", "end", "end", "end", "en", "keb", "en", "▁helfen", "?"];
  const text = "beim Werbendendendendenkeben helfen?";
  assert.ok(!loop(text));
  assert.match(doubt([5, 6], UNK, text, pieces), /repeats "end" inside "Werbendendendendenkeben"/);
  assert.ok(!loop("Werbendenen", ["▁Wer", "b", "end", "end", "en"]));
  assert.ok(!loop("x y z", ["▁x", "▁y", "▁z"]));
  assert.ok(loop("hahaha", ["▁ha", "ha", "ha"]));
});
