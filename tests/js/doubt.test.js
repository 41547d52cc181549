// The page's doubt (translator/doubt.js) on the cases of fixtures/doubt.json, which
// tests/test_page_code.py also runs through the package's transformer.doubt (the same
// notes, word for word); here each case's kind of note, and the rule's thresholds.
import {test} from "node:test";
import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {doubt, numbers} from "../../book/_ext/static/translator/doubt.js";

const fixture = JSON.parse(readFileSync(new URL("fixtures/doubt.json", import.meta.url)));
const UNK = fixture.unk;
const loop = (text, pieces) => /\(a loop\)/.test(doubt([5, 6], UNK, text, pieces) || "");

for (const c of fixture.cases) {
  test(`${c.note}: ${c.expect || "no note"}`, () => {
    const o = c.options || {};
    const note = doubt(c.ids, UNK, c.text, c.pieces,
                       {source: o.source, sourcePieces: o.source_pieces, cross: o.cross});
    if (c.expect === null) assert.equal(note, null);
    else {
      assert.ok(note && note.includes(fixture.kinds[c.expect]), note);
      assert.equal(note, c.says);                   // the package's note, word for word
    }
  });
}

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

test("the number, the name and the unread word are named", () => {
  const by = (note) => fixture.cases.find((c) => c.note === note);
  const run = (c) => doubt(c.ids, UNK, c.text, c.pieces, {source: c.options.source,
    sourcePieces: c.options.source_pieces, cross: c.options.cross});
  assert.match(run(by("two hours became three")), /"two"/);
  assert.match(run(by("a name dropped")), /"Mary"/);
  assert.match(run(by("brother hardly read, the heads averaged")), /"brother"/);
  assert.match(run(by("weight on the end of the source reads no word")), /"sings"/);
  assert.match(run(by("a word of four letters counts")), /"runs"/);
});

test("numbers: each run of digits, and each number word of the table, compounds by parts", () => {
  const table = {two: 2, twenty: 20};
  assert.deepEqual(numbers("I saw 12 dogs and twenty-two cats.", table),
                   [["12", 12], ["twenty-two", 20], ["twenty-two", 2]]);
  assert.deepEqual(numbers("no number here", table), []);
  // "und" joins a compound only before a letter or digit
  assert.deepEqual(numbers("zweiunddrei zweiund) drei", {zwei: 2, drei: 3}),
                   [["zweiunddrei", 2], ["zweiunddrei", 3], ["drei", 3]]);
});

test("numbers: a word that begins with a number word counts as the longest, with prefix only", () => {
  const table = {achtzehn: 18, acht: 8};
  assert.deepEqual(numbers("achtzehnmal", table, true), [["achtzehnmal", 18]]);
  assert.deepEqual(numbers("achtmal", table, true), [["achtmal", 8]]);
  assert.deepEqual(numbers("achtzehnmal", table), []);
});
