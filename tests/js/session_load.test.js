// translator/session.js's BrowserModel.load and its onnxruntime-web plumbing, on a stand-in
// runtime: the page's files fetched by name and checksum with progress, the runtime started
// from the bytes the page lists, both sessions created with the weights as external data,
// and the tensors each session is fed. The browser's fetch, Blob and object URLs are
// stood in for (an object URL becomes a data: URL Node can import).
import {test, before, after} from "node:test";
import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {BrowserModel} from "../../book/_ext/static/translator/session.js";

const FORMAT = 2;
const SITE = "https://book.test/";                     // the cache keys are absolute URLs
const bytesOf = (text) => new TextEncoder().encode(text);
const sha = (bytes) => createHash("sha256").update(bytes).digest("hex");
const entry = (bytes, more) => ({bytes: bytes.byteLength, sha256: sha(bytes), ...more});

// the stand-in runtime, as the page's script bytes: its sessions are made by the test
const RUNTIME = `export const env = {wasm: {}}; globalThis.standInOrt.env = env;
export class Tensor { constructor(type, data, dims) { Object.assign(this, {type, data, dims}); } }
export const InferenceSession = {create: async (bytes, options) => globalThis.standInOrt.create(bytes, options)};`;
// "<", "s", ">" and "<s": the text "<s>" could spell BOS's piece, which text never matches
const PIECES = ["<pad>", "<s>", "</s>", "<unk>", "▁", "a", "▁a", "<", "s", ">", "<s"];
const V = PIECES.length, D = 2;
const graphs = {"encoder.onnx": bytesOf("encoder graph"), "decoder.onnx": bytesOf("decoder graph!"),
                "weights.bin": bytesOf("weights")};
const manifest = {format: FORMAT, config: {max_len: 8, tgt_vocab_size: V, d_model: D},
                  special_ids: {pad: 0, bos: 1, eos: 2, unk: 3}, decoding: {beam_size: 2, alpha: 0.6, max_extra: 2},
                  vocabulary: PIECES, scores: [0, 0, 0, 0, -2, -3, -1, -4, -4, -4, -3], files: {
                    "encoder.onnx": entry(graphs["encoder.onnx"], {part: "encoder", page: true}),
                    "decoder.onnx": entry(graphs["decoder.onnx"], {part: "decoder", page: true}),
                    "weights.bin": entry(graphs["weights.bin"], {part: "weights", page: true})}};
const served = {
  [`${SITE}model/manifest.json`]: bytesOf(JSON.stringify(manifest)),
  ...Object.fromEntries(Object.entries(graphs).map(([n, b]) => [`${SITE}model/${n}`, b])),
  [`${SITE}ort/ort.mjs`]: bytesOf(RUNTIME), [`${SITE}ort/ort-wasm.mjs`]: bytesOf("// loader"),
  [`${SITE}ort/ort.wasm`]: bytesOf("\0asm"),
};
const group = (names, parts) => Object.fromEntries(names.map((n, i) =>
  [n.split("/")[1], entry(served[SITE + n], parts ? {part: parts[i]} : {})]));
const files = {
  model: group(["model/manifest.json", "model/encoder.onnx", "model/decoder.onnx", "model/weights.bin"]),
  runtime: group(["ort/ort.mjs", "ort/ort-wasm.mjs", "ort/ort.wasm"], ["script", "module", "wasm"]),
};
const sum = (group) => Object.values(group).reduce((n, f) => n + f.bytes, 0);

const saved = {}, fetched = [], created = [], urls = [], opened = [];
before(() => {
  Object.assign(saved, {fetch: globalThis.fetch, Blob: globalThis.Blob, objectURL: URL.createObjectURL,
                        caches: globalThis.caches});
  // the Cache API, empty: what matters is the cache the model's files go to
  globalThis.caches = {open: async (name) => {
    opened.push(name);
    return {match: async () => undefined, put: async () => {}, keys: async () => [], delete: async () => true};
  }};
  globalThis.fetch = async (url) => {
    fetched.push(url);
    return served[url] ? new Response(served[url]) : new Response("", {status: 404, statusText: "Not Found"});
  };
  globalThis.Blob = class { constructor(parts, {type}) { Object.assign(this, {parts, type}); } };
  URL.createObjectURL = (blob) => {
    urls.push(blob);
    return `data:${blob.type};base64,${Buffer.from(blob.parts[0]).toString("base64")}`;
  };
  globalThis.standInOrt = {create: async (bytes, options) => {
    const name = new TextDecoder().decode(bytes);
    created.push({name, options});
    if (name === "damaged") throw new Error("no graph");
    return name.startsWith("encoder") ? encoder : decoder;
  }};
});
after(() => {
  globalThis.fetch = saved.fetch;
  globalThis.Blob = saved.Blob;
  URL.createObjectURL = saved.objectURL;
  if (saved.caches === undefined) delete globalThis.caches;
  else globalThis.caches = saved.caches;
  delete globalThis.standInOrt;
});

/* The stand-in sessions: the memory is the source ids (D values each); the decoder says
   "▁a" after BOS and EOS after that, and records what it is fed. */
const feeds = [];
const encoder = {run: async ({src}) => {
  const S = src.dims[1];
  return {memory: {data: Float32Array.from({length: S * D}, (_, i) => Number(src.data[Math.floor(i / D)])), dims: [1, S, D]},
          encoder_attention: {dims: [1, 1, 1, S, S], data: new Float32Array(S * S).fill(1 / S)}};
}};
const decoder = {run: async (feed) => {
  feeds.push(feed);
  const [rows, t] = feed.tgt_in.dims, S = feed.src.dims[1];
  const logits = new Float32Array(rows * V).fill(-10);
  for (let r = 0; r < rows; r++) logits[r * V + (t === 1 ? 6 : 2)] = 10;
  return {logits: {data: logits},
          self_attention: {dims: [1, 1, 1, t, t], data: new Float32Array(t * t).fill(1 / t)},
          cross_attention: {dims: [1, 1, 1, t, S], data: new Float32Array(t * S).fill(1 / S)}};
}};

test("load fetches the runtime and the model by name and checksum, with progress, and starts both sessions", async () => {
  const progress = [];
  const model = await BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files, format: FORMAT},
                                        (done, total) => progress.push([done, total]));
  const total = sum(files.runtime) + sum(files.model);
  assert.deepEqual(progress[0], [0, total]);
  assert.deepEqual(progress[progress.length - 1], [total, total]);
  assert.deepEqual(fetched.slice().sort(), Object.keys(served).sort());
  assert.deepEqual([...new Set(opened)], ["attention-book-model"]);
  // the runtime: its module from the page's script bytes, its loader's as an object URL
  assert.deepEqual(urls.map((b) => [b.type, new TextDecoder().decode(b.parts[0])]),
                   [["text/javascript", RUNTIME], ["text/javascript", "// loader"]]);
  const {wasm} = globalThis.standInOrt.env;
  assert.equal(wasm.numThreads, 1);
  assert.equal(wasm.wasmPaths.mjs, `data:text/javascript;base64,${Buffer.from("// loader").toString("base64")}`);
  assert.equal(new TextDecoder().decode(wasm.wasmBinary), "\0asm");
  assert.deepEqual(created.map((c) => c.name), ["encoder graph", "decoder graph!"]);
  for (const {options} of created) {
    assert.deepEqual(options.executionProviders, ["wasm"]);
    assert.equal(options.graphOptimizationLevel, "all");
    assert.deepEqual(options.externalData.map((x) => [x.path, new TextDecoder().decode(x.data)]),
                     [["weights.bin", "weights"]]);
  }
  assert.deepEqual(model.info(), {cfg: manifest.config, ids: manifest.special_ids,
                                  bytes: sum(manifest.files), own: false, decoding: manifest.decoding,
                                  weights: "fp32"});
  assert.deepEqual(model.sessions, {encoder, decoder});
  assert.deepEqual(model.bpe.encode("a a"), [6, 6]);
  assert.deepEqual(model.sourceIds("<s>"), [4, 10, 9, 2]);

  // the runtime is loaded once: a second model fetches its own files only
  fetched.length = 0;
  const again = [];
  await BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files, format: FORMAT},
                          (done, total) => again.push([done, total]));
  assert.deepEqual(fetched.slice().sort(), Object.keys(files.model).map((n) => `${SITE}model/${n}`).sort());
  assert.deepEqual(again[again.length - 1], [sum(files.model), sum(files.model)]);

  // the reader's own files: nothing fetched, nothing to count
  fetched.length = 0;
  const local = Object.fromEntries(Object.keys(files.model).map((n) => [n, served[`${SITE}model/${n}`].buffer]));
  const own = [];
  const mine = await BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files, format: FORMAT, local},
                                       (done, total) => own.push([done, total]));
  assert.deepEqual(fetched, []);
  assert.deepEqual(own, [[0, 0]]);
  assert.equal(mine.info().own, true);
});

test("load names a file the page does not list, and a graph the runtime cannot read", async () => {
  const without = {...files, model: {...files.model}};
  delete without.model["manifest.json"];
  await assert.rejects(BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files: without, format: FORMAT}),
                       {message: "this page does not list the model's manifest.json"});
  const damaged = {"manifest.json": served[`${SITE}model/manifest.json`].buffer, "encoder.onnx": bytesOf("damaged").buffer,
                   "decoder.onnx": graphs["decoder.onnx"].buffer, "weights.bin": graphs["weights.bin"].buffer};
  await assert.rejects(BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files, format: FORMAT, local: damaged}),
                       {message: "encoder.onnx could not be read (a damaged file, or one of another export?): no graph"});
  await assert.rejects(BrowserModel.load({files: {model: files.model}}), /lacks the list of the model's files/);
  await assert.rejects(BrowserModel.load({files: {runtime: files.runtime}}), /lacks the list of the model's files/);
});

test("the sessions are fed int64 ids and the memory once per row; translate gives the words and maps", async () => {
  const model = await BrowserModel.load({modelBase: `${SITE}model/`, ortBase: `${SITE}ort/`, files, format: FORMAT});
  feeds.length = 0;
  const logits = await model.step([[1, 6], [1, 5]], await model.encode([6, 2]), [6, 2]);
  assert.equal(logits.length, 2 * V);
  const [feed] = feeds;
  assert.deepEqual([feed.tgt_in.type, feed.tgt_in.dims, Array.from(feed.tgt_in.data)], ["int64", [2, 2], [1n, 6n, 1n, 5n]]);
  assert.deepEqual([feed.src.type, feed.src.dims, Array.from(feed.src.data)], ["int64", [2, 2], [6n, 2n, 6n, 2n]]);
  assert.deepEqual([feed.memory.type, feed.memory.dims, Array.from(feed.memory.data)],
                   ["float32", [2, 2, D], [6, 6, 2, 2, 6, 6, 2, 2]]);

  const ticks = [100, 130, 200, 260];                 // the page's clock, read twice a search
  const clock = performance.now;
  performance.now = () => ticks.shift();
  const result = await model.translate("a").finally(() => { performance.now = clock; });
  assert.deepEqual([result.greedy.ms, result.beam.ms], [30, 60]);
  assert.equal(result.greedy.text, "a");
  assert.deepEqual(result.beam.ids, [6]);
  const maps = result.maps.greedy;
  assert.deepEqual(maps.source, ["▁a", "\u27e8/s\u27e9"]);
  assert.deepEqual(maps.target, ["\u27e8s\u27e9", "▁a"]);
  assert.deepEqual(maps.maps["decoder.cross"].dims, [1, 1, 2, 2]);
  assert.deepEqual(maps.maps["encoder.self"].dims, [1, 1, 2, 2]);
  assert.deepEqual(maps.maps["decoder.self"].dims, [1, 1, 2, 2]);
  assert.ok(maps.maps["decoder.cross"].data instanceof Float32Array);
});
