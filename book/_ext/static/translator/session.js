/* The book's trained model in onnxruntime-web, in the translator's worker.
 *
 * Runs the graphs of `python -m transformer export` (the encoder and a decoder step,
 * sharing one weights file) in onnxruntime-web (WebAssembly, one thread: a static site
 * cannot send the cross-origin isolation headers that threads need); the search loops are
 * search.js's. The decoder graph recomputes the whole prefix each step (no cache), as the
 * plain model does. Every file comes from cached_fetch.js by its SHA-256 (listed in the
 * page by the build), or from the reader's own files (own_model.js checked them). */
import {cachedBytes} from "../lib/cached_fetch.js";
import {partName, totalBytes} from "../lib/downloads.js";
import {BPE} from "./bpe.js";
import {doubt} from "./doubt.js";
import {parseManifest, partFile, pageFiles} from "./manifest.js";
import {beam, greedy} from "./search.js";

const CACHE = "attention-book-model";
let ort = null;                                   // onnxruntime-web's module, once loaded

const blobUrl = (bytes, type = "text/javascript") => URL.createObjectURL(new Blob([bytes], {type}));

/* onnxruntime-web from the bytes the page lists (its ES module, its loader module and its
   WebAssembly), not from the network: its env.wasm.wasmPaths and wasmBinary. */
async function loadRuntime(base, files, get) {
  if (ort) return ort;
  const name = (part) => partName(files.runtime, part);
  const script = await get(base + name("script"), files.runtime[name("script")].sha256);
  const mjs = await get(base + name("module"), files.runtime[name("module")].sha256);
  const wasm = await get(base + name("wasm"), files.runtime[name("wasm")].sha256);
  const runtime = await import(blobUrl(script));
  runtime.env.wasm.numThreads = 1;
  runtime.env.wasm.wasmPaths = {mjs: blobUrl(mjs)};
  runtime.env.wasm.wasmBinary = wasm;
  ort = runtime;
  return ort;
}

export class BrowserModel {
  /* Fetch what `files` lists (the page's data-files; progress(done, total) in bytes) and
     start both sessions; `local`: the reader's own model's files ({name: bytes}, checked
     by own_model.js), the runtime still from the site. Throws an Error saying what went
     wrong; `format` is the manifest format the page reads. */
  static async load({modelBase, ortBase, files, format, local = null}, progress = () => {}) {
    if (!files || !files.model || !files.runtime) {
      throw new Error("this page lacks the list of the model's files (data-files): the " +
                      "book was built without the exported model");
    }
    const total = ort ? (local ? 0 : totalBytes({model: files.model}))
      : totalBytes({runtime: files.runtime}) + (local ? 0 : totalBytes({model: files.model}));
    let done = 0;
    progress(0, total);
    const get = (url, sha) => cachedBytes(url, sha, {cache: CACHE, onBytes: (n) => { done += n; progress(done, total); }});
    const mine = (name) => {
      if (local) return new Uint8Array(local[name]);
      if (!files.model[name]) throw new Error(`this page does not list the model's ${name}`);
      return get(modelBase + name, files.model[name].sha256);
    };
    const manifest = parseManifest(new TextDecoder().decode(await mine("manifest.json")), format);
    const model = {};
    for (const name of Object.keys(pageFiles(manifest))) model[name] = await mine(name);
    const runtime = await loadRuntime(ortBase, files, get);
    const weights = partFile(manifest, "weights");
    const options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                     externalData: [{path: weights, data: model[weights]}]};
    const session = (part) => runtime.InferenceSession.create(model[partFile(manifest, part)], options)
      .catch((e) => {
        throw new Error(`${partFile(manifest, part)} could not be read (a damaged file, or one of ` +
                        `another export?): ${e.message || e}`);
      });
    const encoder = await session("encoder");
    const decoder = await session("decoder");
    const bytes = Object.values(model).reduce((n, b) => n + b.byteLength, 0);
    return new BrowserModel(manifest, encoder, decoder, bytes, !!local);
  }

  /* bytes: the model's size (its graphs and weights), for the page to show */
  constructor(manifest, encoder, decoder, bytes, own) {
    this.manifest = manifest;
    this.cfg = manifest.config;
    this.ids = manifest.special_ids;
    this.decoding = manifest.decoding;
    this.sessions = {encoder, decoder};
    this.bytes = bytes;
    this.own = own;
    const s = this.ids;
    this.bpe = new BPE(manifest.vocabulary, manifest.scores, [s.pad, s.bos, s.eos, s.unk], s.unk);
  }

  /* What the page shows and needs of the model. */
  info() {
    return {cfg: this.cfg, ids: this.ids, bytes: this.bytes, own: this.own,
            decoding: this.decoding, weights: this.manifest.weights || "fp32"};
  }

  /* Source ids (+ EOS) of text; an Error naming the problem for empty or long input. */
  sourceIds(text) {
    const ids = this.bpe.encode(text);
    if (!ids.length) throw new Error("type an English sentence first (the box is empty)");
    if (ids.length + 1 > this.cfg.max_len) {
      throw new Error(`this text is ${ids.length} tokens long: the model's positional ` +
                      `table holds ${this.cfg.max_len - 1} plus the end-of-sentence token; ` +
                      "shorten it");
    }
    return ids.concat([this.ids.eos]);
  }

  piece(id) {
    if (id === this.ids.bos) return "\u27e8s\u27e9";
    if (id === this.ids.eos) return "\u27e8/s\u27e9";
    return this.manifest.vocabulary[id];
  }

  detokenize(ids) {
    return this.bpe.decode(ids, [this.ids.pad, this.ids.bos, this.ids.eos]);
  }

  int64(rows) {
    const n = rows.length, t = rows[0].length;
    const data = new BigInt64Array(n * t);
    rows.forEach((r, i) => r.forEach((v, j) => { data[i * t + j] = BigInt(v); }));
    return new ort.Tensor("int64", data, [n, t]);
  }

  async runEncoder(src) {
    return this.sessions.encoder.run({src: this.int64([src])});
  }

  /* The decoder's outputs after each prefix; every row attends to memory. */
  async runDecoder(prefixes, memory, src) {
    const rows = prefixes.length, S = src.length, d = this.cfg.d_model;
    const mem = new Float32Array(rows * S * d);
    for (let r = 0; r < rows; r++) mem.set(memory.data.subarray(0, S * d), r * S * d);
    return this.sessions.decoder.run({
      tgt_in: this.int64(prefixes), memory: new ort.Tensor("float32", mem, [rows, S, d]),
      src: this.int64(prefixes.map(() => src))});
  }

  // search.js's interface
  async encode(src) { return (await this.runEncoder(src)).memory; }
  async step(prefixes, memory, src) { return (await this.runDecoder(prefixes, memory, src)).logits.data; }

  /* Every attention map of one teacher-forced pass over src and [BOS] + out:
     {kind: {dims: [layers, heads, q, k], data: Float32Array}} (the recorder's
     stacked(kind)[:, 0]), and the pieces of both sides. */
  async attention(src, out) {
    const enc = await this.runEncoder(src);
    const tgt = [this.ids.bos].concat(out);
    const dec = await this.runDecoder([tgt], enc.memory, src);
    const tensors = {"encoder.self": enc.encoder_attention, "decoder.self": dec.self_attention,
                     "decoder.cross": dec.cross_attention};
    const maps = {};
    for (const [kind, t] of Object.entries(tensors)) {
      const [L, , H, Q, K] = t.dims;                              // (layers, 1, heads, q, k)
      maps[kind] = {dims: [L, H, Q, K], data: new Float32Array(t.data)};
    }
    return {maps, source: src.map((i) => this.piece(i)), target: tgt.map((i) => this.piece(i))};
  }

  /* Greedy and beam translations of text, with their times in ms and what doubt says of
     each (its source without EOS, and the encoder-decoder attention of one pass over the
     translation: the coverage of the source), and `maps`, each translation's attention
     maps (attention()); onStep(search, ids) after each decoder step. */
  async translate(text, onStep = async () => {}) {
    const src = this.sourceIds(text);
    const source = src.slice(0, -1);                      // the pieces the reader typed
    const result = {source: src, maps: {}};
    const searches = {greedy, beam};
    for (const name of ["greedy", "beam"]) {
      const start = performance.now();
      const ids = await searches[name](this, src, (got) => onStep(name, got));
      const shown = this.detokenize(ids);
      const ms = performance.now() - start;
      const maps = await this.attention(src, ids);
      result.maps[name] = maps;
      result[name] = {ids, text: shown, ms,
                      doubt: doubt(source, this.ids.unk, shown, ids.map((i) => this.piece(i)),
                                   {source: text, sourcePieces: source.map((i) => this.piece(i)),
                                    cross: maps.maps["decoder.cross"]})};
    }
    return result;
  }
}
