// translator/session.js's translate, on a stand-in for the ONNX sessions: what the page
// hands doubt.js. The source ids end with EOS (the model reads it); the doubt note is
// about the pieces the reader typed, so it is given the source without EOS, the typed
// text and the encoder-decoder attention of the translation.
import {test} from "node:test";
import assert from "node:assert/strict";
import {BrowserModel} from "../../book/_ext/static/translator/session.js";

// the words, and what BPE merges on the way to each (its letters, then "▁t", "▁tw", ...)
const WORDS = ["▁two", "▁hours", "▁drei", "▁zwei", "▁Stunden"];
const PIECES = [...new Set(["<pad>", "<s>", "</s>", "<unk>", "▁"].concat(
  WORDS.flatMap((w) => [...w]), WORDS.flatMap((w) => [...w].map((_, i) => w.slice(0, i + 1)))))];
const ID = Object.fromEntries(PIECES.map((p, i) => [p, i]));

/* A BrowserModel whose sessions are stand-ins: its search outputs `out` then EOS, and
   each decoder row attends to every source position alike. */
function standIn(out) {
  const manifest = {
    config: {max_len: 32, tgt_vocab_size: PIECES.length, n_heads: 1},
    special_ids: {pad: 0, bos: 1, eos: 2, unk: 3},
    decoding: {beam_size: 2, alpha: 0.6, max_extra: 5},
    vocabulary: PIECES, scores: PIECES.map((p) => p.length),   // longer merges first
  };
  const model = new BrowserModel(manifest, null, null, 0, false);
  model.encode = async (src) => src;
  model.step = async (prefixes) => Float32Array.from(prefixes.flatMap((p) => PIECES.map((_, v) =>
    (v === (p.length - 1 < out.length ? out[p.length - 1] : ID["</s>"]) ? 10 : -10))));
  model.attention = async (src, ids) => {
    const Q = ids.length + 1, K = src.length;
    return {maps: {"decoder.cross": {dims: [1, 1, Q, K], data: new Float32Array(Q * K).fill(1 / K)}},
            source: src.map((i) => PIECES[i]), target: [PIECES[1]].concat(ids.map((i) => PIECES[i]))};
  };
  return model;
}

test("the doubt note counts the typed pieces, not the source's EOS", async () => {
  // "☃" is two pieces, "▁" and <unk>: half of them unknown (a third, with EOS counted)
  const result = await standIn([ID["▁zwei"]]).translate("☃");
  assert.deepEqual(result.source, [ID["▁"], ID["<unk>"], ID["</s>"]]);   // the model reads EOS
  for (const name of ["greedy", "beam"]) {
    assert.match(result[name].doubt || "", /unknown to the model \(1 of 2 pieces\)/, name);
  }
});

test("the doubt note reads the typed text: a number changed is named", async () => {
  const result = await standIn([ID["▁drei"], ID["▁Stunden"]]).translate("two hours");
  assert.equal(result.greedy.text, "drei Stunden");
  assert.match(result.greedy.doubt || "", /"two" is not in the translation/);
  const kept = await standIn([ID["▁zwei"], ID["▁Stunden"]]).translate("two hours");
  assert.equal(kept.greedy.doubt, null);
});

test("the doubt note reads the translation's encoder-decoder attention", async () => {
  const model = standIn([ID["▁zwei"], ID["▁Stunden"]]);
  const uniform = model.attention;
  model.attention = async (src, ids) => {          // all weight on EOS: no word is read
    const maps = await uniform(src, ids);
    const cross = maps.maps["decoder.cross"], [, , Q, K] = cross.dims;
    cross.data.fill(0);
    for (let q = 0; q < Q; q++) cross.data[q * K + K - 1] = 1;
    return maps;
  };
  const result = await model.translate("two hours");
  assert.match(result.greedy.doubt || "", /the attention hardly read "hours"/);
  assert.ok(result.maps.greedy.maps["decoder.cross"], "the maps go to the page too");
});

test("the source ids: the text's pieces and EOS, or an Error for empty or long text", () => {
  const model = standIn([]);
  assert.deepEqual(model.sourceIds("two"), [ID["▁two"], ID["</s>"]]);
  assert.throws(() => model.sourceIds("   "), /the box is empty/);
  // max_len 32: 31 pieces and EOS fit, 32 do not
  assert.equal(model.sourceIds(Array(31).fill("two").join(" ")).length, 32);
  assert.throws(() => model.sourceIds(Array(32).fill("two").join(" ")),
                {message: "this text is 32 tokens long: the model's positional table holds 31 plus " +
                          "the end-of-sentence token; shorten it"});
});

test("pieces as the maps name them, and the text of ids", () => {
  const model = standIn([]);
  assert.equal(model.piece(ID["<s>"]), "\u27e8s\u27e9");
  assert.equal(model.piece(ID["</s>"]), "\u27e8/s\u27e9");
  assert.equal(model.piece(ID["▁two"]), "▁two");
  assert.equal(model.detokenize([ID["<s>"], ID["▁zwei"], ID["▁Stunden"], ID["</s>"], ID["<pad>"]]),
               "zwei Stunden");
});

test("what the page shows of the model", () => {
  const model = standIn([]);
  assert.deepEqual(model.info(), {cfg: model.cfg, ids: {pad: 0, bos: 1, eos: 2, unk: 3}, bytes: 0,
                                  own: false, decoding: {beam_size: 2, alpha: 0.6, max_extra: 5},
                                  weights: "fp32"});
});

test("translate reports each search's steps and gives both translations", async () => {
  const steps = [];
  const result = await standIn([ID["▁zwei"], ID["▁Stunden"]]).translate("two hours",
    async (name, ids) => { steps.push([name, ids]); });
  assert.deepEqual(result.greedy.ids, [ID["▁zwei"], ID["▁Stunden"]]);
  assert.deepEqual(result.beam.ids, [ID["▁zwei"], ID["▁Stunden"]]);
  assert.equal(result.beam.text, "zwei Stunden");
  assert.deepEqual(steps.filter(([name]) => name === "greedy"), [["greedy", [ID["▁zwei"]]], ["greedy", [ID["▁zwei"], ID["▁Stunden"]]]]);
  assert.ok(steps.some(([name]) => name === "beam"));
});

test("load names what the page lacks", async () => {
  await assert.rejects(BrowserModel.load({files: null}), {
    message: "this page lacks the list of the model's files (data-files): the book was built " +
             "without the exported model"});
  await assert.rejects(BrowserModel.load({files: {model: {}}}), /lacks the list/);
});
