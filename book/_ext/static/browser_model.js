/* The book's trained model in the reader's browser: the runtime, the model, the search.
 *
 * One file for both sides of chapter 9's translator: the page loads it as a script (for
 * `translationDoubt` and the checks it makes before starting anything), and
 * translator.js starts it again as a Web Worker, which loads the runtime and the model and
 * runs every search, so that the page stays responsive while it translates.
 *
 * Runs the graphs of `python -m transformer export` (encoder.onnx, decoder.onnx sharing
 * weights.bin) in onnxruntime-web (WebAssembly, one thread: a static site cannot send the
 * cross-origin isolation headers that threads need). The search loops are those of
 * transformer/decoding.py, step for step: greedy, and beam search with the GNMT length
 * penalty and the "count" stopping rule (a sentence is done once it has beam_size
 * finished hypotheses, or at its maximum length, source length + max_extra); PAD and BOS
 * are never generated, nor EOS as the first token. The decoder graph recomputes the whole
 * prefix each step (no cache), as the plain model does.
 *
 * Every file the translator downloads (manifest.json and the graphs under data-model,
 * the runtime's script, its module and its WebAssembly under data-ort) is listed in the
 * page with its size and SHA-256 (data-files, written by book/_ext/browser_model.py), and
 * kept in the Cache API under its SHA-256: a second visit downloads none of them, and a
 * rebuilt site never serves a stale one.
 *
 * The worker's messages: {id, type: "load" | "translate" | "encode", ...} in; out, for each
 * id, any number of {id, type: "progress", ...} then one of {id, type: "done", ...},
 * {id, type: "error", message} or {id, type: "cancelled"}. A "translate" cancels the one
 * before it at its next decoding step.
 */
(function (root) {
  "use strict";

  const CACHE = "attention-book-model";
  const IN_WORKER = typeof WorkerGlobalScope !== "undefined" && root instanceof WorkerGlobalScope;

  function requireWebAssembly() {
    if (typeof WebAssembly !== "object") {
      throw new Error("this browser has no WebAssembly: the model cannot run here " +
                      "(the precomputed explorer above still works)");
    }
  }

  // the download and its check: cached_fetch.js (the page loads it before this file)
  if (IN_WORKER) importScripts("cached_fetch.js");            // beside this file
  const fetchBytes = (url, sha, onBytes) => root.bookFetch.cachedBytes(url, sha, CACHE, onBytes);

  function blobUrl(bytes) {
    return URL.createObjectURL(new Blob([bytes], {type: "text/javascript"}));
  }

  /* Why a translation should not be trusted, or null: transformer.decoding.doubt, the same
     rule (half the source pieces unknown; a word or pair repeated three times back to
     back, three or more words twice). */
  function doubt(sourceIds, unk, text) {
    const unknown = sourceIds.filter((i) => i === unk).length;
    if (sourceIds.length && 2 * unknown >= sourceIds.length) {
      return `most of the input is unknown to the model (${unknown} of ${sourceIds.length} pieces)`;
    }
    const words = text.split(/\s+/).filter((w) => w)
      .map((w) => w.replace(/^[.,;:!?"'«»„“”]+|[.,;:!?"'«»„“”]+$/g, ""));
    for (let n = 1; n <= Math.floor(words.length / 2); n++) {
      const times = n <= 2 ? 3 : 2;
      for (let start = 0; start + n * times <= words.length; start++) {
        const gram = words.slice(start, start + n).join(" ");
        let loop = true;
        for (let k = 1; k < times && loop; k++) {
          loop = words.slice(start + k * n, start + (k + 1) * n).join(" ") === gram;
        }
        if (loop) return `the translation repeats "${gram}" (a loop)`;
      }
    }
    return null;
  }

  function lengthPenalty(length, alpha) {
    return Math.pow((5 + length) / 6, alpha);
  }

  /* log_softmax of one row of logits (float32) in float64. */
  function logSoftmax(logits, offset, V) {
    let max = -Infinity;
    for (let v = 0; v < V; v++) max = Math.max(max, logits[offset + v]);
    let sum = 0;
    for (let v = 0; v < V; v++) sum += Math.exp(logits[offset + v] - max);
    const lse = max + Math.log(sum);
    const out = new Float64Array(V);
    for (let v = 0; v < V; v++) out[v] = logits[offset + v] - lse;
    return out;
  }

  /* The total download of a data-files listing ({model: {name: {bytes, sha256}}, ort: ...}). */
  function downloadBytes(files) {
    let n = 0;
    for (const group of Object.values(files)) for (const f of Object.values(group)) n += f.bytes;
    return n;
  }

  class BrowserModel {
    /* Fetch the runtime and the model listed in files (progress(done, total) in bytes) and
       start both sessions. Throws an Error whose message says what went wrong. `local`:
       the model's files the reader chose ({name: bytes}, checked by explorer_files.js)
       instead of the book's; the runtime still comes from the site. */
    static async load(modelBase, ortBase, files, progress = () => {}, local = null) {
      requireWebAssembly();
      if (!files || !files.model || !files.ort) {
        throw new Error("this page lacks the list of the model's files (data-files): the " +
                        "book was built without the exported model");
      }
      const total = local ? downloadBytes({ort: files.ort}) : downloadBytes(files);
      let done = 0;
      progress(0, total);
      const get = (base, group, name) => {
        if (!files[group][name]) throw new Error(`this page does not list ${group} file ${name}`);
        return fetchBytes(base + name, files[group][name].sha256,
                          (n) => { done += n; progress(done, total); });
      };
      const mine = async (base, group, name) => local ? new Uint8Array(local[name]) : get(base, group, name);
      const manifest = JSON.parse(new TextDecoder().decode(
        await mine(modelBase, "model", "manifest.json")));
      const model = {};
      for (const name of ["encoder.onnx", "decoder.onnx", "weights.bin"]) {
        model[name] = await mine(modelBase, "model", name);
      }
      if (typeof root.ort === "undefined") {
        const script = blobUrl(await get(ortBase, "ort", "ort.wasm.min.js"));
        if (IN_WORKER) importScripts(script);
        else await loadScript(script);
      }
      const mjs = await get(ortBase, "ort", "ort-wasm-simd-threaded.mjs");
      const wasm = await get(ortBase, "ort", "ort-wasm-simd-threaded.wasm");
      // the runtime from these bytes, not from the network: the module as a blob URL, the
      // WebAssembly as bytes (onnxruntime-web's env.wasm.wasmPaths and wasmBinary)
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmPaths = {mjs: blobUrl(mjs)};
      ort.env.wasm.wasmBinary = wasm;
      const options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                       externalData: [{path: "weights.bin", data: model["weights.bin"]}]};
      const session = (name) => ort.InferenceSession.create(model[name], options).catch((e) => {
        throw new Error(local ? `${name} could not be read (a damaged file, or one of another ` +
                                `export?): ${e.message || e}` : (e.message || String(e)));
      });
      const encoder = await session("encoder.onnx");
      const decoder = await session("decoder.onnx");
      const modelBytes = local ? Object.values(model).reduce((n, b) => n + b.byteLength, 0)
        : Object.values(files.model).reduce((n, f) => n + f.bytes, 0);
      return new BrowserModel(manifest, encoder, decoder, modelBytes);
    }

    /* bytes: the model's download (manifest and graphs), for the page to show */
    constructor(manifest, encoder, decoder, bytes) {
      this.manifest = manifest;
      this.cfg = manifest.config;
      this.ids = manifest.special_ids;
      this.decoding = manifest.decoding;
      this.encoder = encoder;
      this.decoder = decoder;
      this.bytes = bytes;
      const s = this.ids;
      this.bpe = new root.BPE(manifest.vocabulary, manifest.scores,
                              [s.pad, s.bos, s.eos, s.unk], s.unk);
    }

    /* What the page shows and needs of the model. */
    info() {
      return {cfg: this.cfg, ids: this.ids, bytes: this.bytes,
              weights: this.manifest.weights || "fp32"};
    }

    /* Source ids (+ EOS) of text; an Error naming the problem for empty or long input. */
    sourceIds(text) {
      const ids = this.bpe.encode(text);
      if (!ids.length) throw new Error("type an English sentence first (the box is empty)");
      if (ids.length + 1 > this.cfg.max_len) {
        throw new Error(`this text is ${ids.length} tokens long: the model's positional ` +
                        `table holds ${this.cfg.max_len - 1} plus the end-of-sentence token; ` +
                        `shorten it`);
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

    static int64(rows) {
      const n = rows.length, t = rows[0].length;
      const data = new BigInt64Array(n * t);
      rows.forEach((r, i) => r.forEach((v, j) => { data[i * t + j] = BigInt(v); }));
      return new ort.Tensor("int64", data, [n, t]);
    }

    async encode(src) {
      const out = await this.encoder.run({src: BrowserModel.int64([src])});
      return {memory: out.memory, attention: out.encoder_attention};
    }

    /* Next-token logits (rows x V) after each prefix; every row attends to memory. */
    async step(prefixes, memory, src) {
      const rows = prefixes.length, S = src.length, d = this.cfg.d_model;
      const mem = new Float32Array(rows * S * d);
      for (let r = 0; r < rows; r++) mem.set(memory.data.subarray(0, S * d), r * S * d);
      const out = await this.decoder.run({
        tgt_in: BrowserModel.int64(prefixes),
        memory: new ort.Tensor("float32", mem, [rows, S, d]),
        src: BrowserModel.int64(prefixes.map(() => src))});
      return out;
    }

    /* Log-probabilities of the next token (transformer.decoding._next_log_probs). */
    nextLogProbs(logits, row, firstStep) {
      const V = this.cfg.tgt_vocab_size;
      const lp = logSoftmax(logits.data, row * V, V);
      lp[this.ids.pad] = -Infinity;
      lp[this.ids.bos] = -Infinity;
      if (firstStep) lp[this.ids.eos] = -Infinity;      // minimum output length 1
      return lp;
    }

    maxLength(src) {
      return Math.min(src.length + this.decoding.max_extra, this.cfg.max_len - 1);
    }

    /* The searches call await onStep(ids so far) after each decoder step: the worker
       reports progress there, lets a newer request in, and throws to cancel. */
    async greedy(src, onStep = async () => {}) {
      const {memory} = await this.encode(src);
      const maxLen = this.maxLength(src), eos = this.ids.eos;
      const prefix = [this.ids.bos];
      for (let t = 0; maxLen > 0;) {
        const out = await this.step([prefix], memory, src);
        const lp = this.nextLogProbs(out.logits, 0, prefix.length === 1);
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

    async beam(src, onStep = async () => {}, k = this.decoding.beam_size,
               alpha = this.decoding.alpha) {
      const {memory} = await this.encode(src);
      const V = this.cfg.tgt_vocab_size, eos = this.ids.eos;
      const maxLen = this.maxLength(src);
      let scores = [0].concat(Array(k - 1).fill(-Infinity));   // expand one beam at first
      let prefixes = Array.from({length: k}, () => [this.ids.bos]);
      const finished = [];                                        // [normalised score, ids]
      for (let t = 0; ; ) {
        const out = await this.step(prefixes, memory, src);
        const atLimit = t >= maxLen;
        // the 2k best extensions of all k beams, by raw log-probability
        const top = [];                                           // [score, beam, token]
        for (let j = 0; j < k; j++) {
          const lp = this.nextLogProbs(out.logits, j, prefixes[j].length === 1);
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

    /* Every attention map of one teacher-forced pass over src and [BOS] + out:
       {kind: {dims: [layers, heads, q, k], data: Float32Array}} (the recorder's
       stacked(kind)[:, 0]), and the pieces of both sides. */
    async attention(src, out) {
      const enc = await this.encode(src);
      const tgt = [this.ids.bos].concat(out);
      const dec = await this.step([tgt], enc.memory, src);
      const tensors = {"encoder.self": enc.attention, "decoder.self": dec.self_attention,
                       "decoder.cross": dec.cross_attention};
      const maps = {};
      for (const [kind, t] of Object.entries(tensors)) {
        const [L, , H, Q, K] = t.dims;                              // (layers, 1, heads, q, k)
        maps[kind] = {dims: [L, H, Q, K], data: new Float32Array(t.data)};
      }
      return {maps, source: src.map((i) => this.piece(i)), target: tgt.map((i) => this.piece(i))};
    }

    /* Greedy and beam translations of text, with their times in ms; onStep(search, ids)
       after each decoder step. */
    async translate(text, onStep = async () => {}) {
      const src = this.sourceIds(text);
      const result = {source: src};
      for (const name of ["greedy", "beam"]) {
        const start = performance.now();
        const ids = await this[name](src, (ids) => onStep(name, ids));
        result[name] = {ids, text: this.detokenize(ids), ms: performance.now() - start};
      }
      return result;
    }
  }

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = resolve;
      s.onerror = () => reject(new Error(`could not load ${url}`));
      document.head.appendChild(s);
    });
  }

  root.BrowserModel = BrowserModel;
  root.translationDoubt = doubt;
  root.requireWebAssembly = requireWebAssembly;
  root.downloadBytes = downloadBytes;
  if (!IN_WORKER) return;

  // ------------------------------------------------------------------ the worker
  importScripts("bpe.js");                 // beside this file
  let model = null;
  let latest = 0;                          // the newest translate request's id
  let running = Promise.resolve();         // one search at a time on the sessions

  class Cancelled extends Error {}

  // a task boundary (not a microtask): messages from the page get in between two steps
  const channel = new MessageChannel();
  const waiting = [];
  channel.port1.onmessage = () => waiting.shift()();
  const nextTask = () => new Promise((resolve) => { waiting.push(resolve); channel.port2.postMessage(0); });

  function post(id, type, body = {}, transfer = []) {
    root.postMessage(Object.assign({id, type}, body), transfer);
  }

  async function translate(id, text) {
    let lastPost = 0;
    const result = await model.translate(text, async (search, ids) => {
      await nextTask();
      if (id !== latest) throw new Cancelled();
      const now = performance.now();
      if (now - lastPost > 250) {            // progress four times a second at most
        lastPost = now;
        post(id, "progress", {search, tokens: ids.length, text: model.detokenize(ids)});
      }
    });
    for (const name of ["greedy", "beam"]) {     // each translation shown is checked
      result[name].doubt = doubt(result.source.slice(0, -1), model.ids.unk, result[name].text);
    }
    post(id, "progress", {result});
    const maps = {};
    const transfer = [];
    for (const name of ["beam", "greedy"]) {
      await nextTask();
      if (id !== latest) throw new Cancelled();
      maps[name] = await model.attention(result.source, result[name].ids);
      for (const m of Object.values(maps[name].maps)) transfer.push(m.data.buffer);
    }
    post(id, "done", {result, maps}, transfer);
  }

  root.onmessage = (event) => {
    const {id, type} = event.data;
    const job = async () => {
      try {
        if (type === "load") {
          const progress = (done, total) => post(id, "progress", {done, total});
          model = event.data.local   // the reader's own model replaces the one loaded
            ? await BrowserModel.load(event.data.modelBase, event.data.ortBase, event.data.files,
                                      progress, event.data.local)
            : model || await BrowserModel.load(event.data.modelBase, event.data.ortBase,
                                               event.data.files, progress);
          post(id, "done", {info: model.info()});
        } else if (!model) {
          throw new Error("the model is not loaded yet");
        } else if (type === "encode") {
          post(id, "done", {ids: event.data.sentences.map((s) => model.bpe.encode(s))});
        } else if (type === "translate") {
          if (id !== latest) throw new Cancelled();
          await translate(id, event.data.text);
        } else {
          throw new Error(`unknown request ${type}`);
        }
      } catch (e) {
        if (e instanceof Cancelled) post(id, "cancelled");
        else post(id, "error", {message: e.message || String(e)});
      }
    };
    if (type === "translate") latest = id;
    running = running.then(job);
  };
})(typeof window !== "undefined" ? window : self);
