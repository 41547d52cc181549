// SentencePiece's BPE as the page runs it (translator/bpe.js) on a small vocabulary: the
// best-scored merge first, leftmost on ties, a run of unknown characters one <unk>.
import {test} from "node:test";
import assert from "node:assert/strict";
import {BPE} from "../../book/_ext/static/translator/bpe.js";

// ids 0-3: <pad> <s> </s> <unk>; scores: earlier merges score higher (SentencePiece's order)
const PIECES = ["<pad>", "<s>", "</s>", "<unk>", "▁", "a", "b", "c", "d", "e", "▁a", "ab", "▁ab",
                "ba", "bc", "cd", "e▁", "bb"];
const SCORES = [0, 0, 0, 0, -5, -6, -7, -8, -9, -10, -1, -2, -1.5, -3, -2.5, -4, -0.5, -2.2];
const bpe = new BPE(PIECES, SCORES, [0, 1, 2, 3], 3);
const pieces = (text) => bpe.pieces_of(text);

test("merges the best-scored pair first", () => {
  assert.deepEqual(pieces("ab"), ["▁ab"]);           // ▁a (-1) before ab (-2), then ▁ab
  assert.deepEqual(pieces("bcd"), ["▁", "bc", "d"]);  // bc (-2.5) before cd (-4)
  assert.deepEqual(pieces("bab"), ["▁", "b", "ab"]);  // ab (-2) before ba (-3)
});

test("takes the leftmost of equal pairs", () => {
  assert.deepEqual(pieces("bbb"), ["▁", "bb", "b"]);   // bb at 1 and at 2: the first
  assert.deepEqual(pieces("bcbc"), ["▁", "bc", "bc"]);
});

test("marks words and normalises white space and NFKC", () => {
  assert.deepEqual(pieces("  ab \t a "), ["▁ab", "▁a"]);
  assert.deepEqual(pieces("ａｂ"), ["▁ab"]);              // full-width letters: NFKC
  assert.deepEqual(pieces(""), []);
});

test("a run of unknown characters is one <unk>", () => {
  assert.deepEqual(bpe.encode("a🙂🙂x b"), [10, 3, 4, 6]);
  assert.deepEqual(bpe.encode("ab"), [12]);
});

test("decodes as SentencePiece: pieces joined, word marks as spaces, <unk> as ⁇", () => {
  assert.equal(bpe.decode([12, 4, 6, 3, 10], [0, 1, 2]), "ab b ⁇  a");
  assert.equal(bpe.decode([1, 10, 2], [0, 1, 2]), "a");
});

test("the special pieces are never matched in text", () => {
  // "<s>" is a piece, but a control one: the text "<s>" merges to "<s" and ">" only
  const pieces = ["<pad>", "<s>", "</s>", "<unk>", "▁", "<", "s", ">", "<s"];
  const special = new BPE(pieces, [0, 0, 0, 0, -1, -2, -3, -4, -1.5], [0, 1, 2, 3], 3);
  assert.deepEqual(special.encode("<s>"), [4, 8, 7]);
});

test("a run of unknown characters is one <unk> from the sentence's first symbol on", () => {
  // a vocabulary without "▁": the word mark, the emoji and the next mark are one <unk>
  const bare = new BPE(["<pad>", "<s>", "</s>", "<unk>", "a"], [0, 0, 0, 0, -1], [0, 1, 2, 3], 3);
  assert.deepEqual(bare.pieces_of("🙂🙂 a"), ["▁🙂🙂▁", "a"]);
  assert.deepEqual(bare.encode("🙂🙂 a"), [3, 4]);
});

test("white space the normaliser folds: no-break, zero-width, byte-order mark", () => {
  assert.deepEqual(pieces("a\u200bb"), ["▁a", "▁", "b"]);
  assert.deepEqual(pieces("\ufeffab"), ["▁ab"]);
});

test("decodes a first piece that starts no word as it is", () => {
  assert.equal(bpe.decode([11, 4, 5], [0, 1, 2]), "ab a");
});

test("a pair is two symbols of the text: none is paired with what lies past its end", () => {
  // "aundefined" is a piece (a learnt word could end so): "a", last, stays alone
  const odd = new BPE(["<pad>", "<s>", "</s>", "<unk>", "▁", "a", "aundefined"],
                      [0, 0, 0, 0, -1, -2, -0.5], [0, 1, 2, 3], 3);
  assert.deepEqual(odd.pieces_of("a"), ["▁", "a"]);
});
