/* The book's trained model in the reader's browser: translate, then show every head.
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
 * Nothing is downloaded until the reader presses the button: then the runtime (from
 * _static/ort) and the model files (from _static/model, listed with their sizes in
 * manifest.json), with a progress bar; the Cache API keeps them for the next visit.
 * The page element: <div id="live-translator" data-model="URL/" data-ort="URL/">.
 */
(function () {
  "use strict";

  const KINDS = [   // recorder part, name, query side, key side (as transformer_book.viz)
    ["encoder.self", "encoder self-attention", "source", "source"],
    ["decoder.self", "decoder self-attention (masked)", "target", "target"],
    ["decoder.cross", "encoder-decoder attention", "target", "source"],
  ];
  const GRAPH_OUTPUT = {"encoder.self": "encoder_attention", "decoder.self": "self_attention",
                        "decoder.cross": "cross_attention"};
  const CACHE = "attention-book-model";

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = url;
      s.onload = resolve;
      s.onerror = () => reject(new Error(`could not load ${url}`));
      document.head.appendChild(s);
    });
  }

  /* The bytes of url, from the Cache API when it holds this version (its SHA-256 in the
     key, so a rebuilt site never serves a stale model; older versions are deleted);
     onBytes(n) as they arrive. */
  async function fetchBytes(url, sha, onBytes) {
    const cache = (typeof caches !== "undefined") ? await caches.open(CACHE).catch(() => null) : null;
    const key = `${url}?sha256=${sha}`;
    let response = cache ? await cache.match(key) : undefined;
    const cached = !!response;
    if (!response) {
      response = await fetch(url);
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
    }
    const chunks = [];
    let total = 0;
    const reader = response.clone().body.getReader();
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.length;
      onBytes(value.length);
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) { bytes.set(c, at); at += c.length; }
    if (cache && !cached) {
      for (const old of await cache.keys().catch(() => [])) {
        if (old.url.startsWith(url + "?") && old.url !== new URL(key, location.href).href) {
          await cache.delete(old).catch(() => {});
        }
      }
      await cache.put(key, response).catch(() => {});          // e.g. over quota: no cache
    }
    return bytes;
  }

  async function sha256(bytes) {
    if (!(window.crypto && crypto.subtle)) return null;          // not a secure context
    const digest = await crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
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

  class BrowserModel {
    /* Fetch the runtime and the model (progress(done, total) in bytes) and start both
       sessions. Throws an Error whose message says what went wrong. */
    static async load(modelBase, ortBase, progress = () => {}) {
      if (typeof WebAssembly !== "object") {
        throw new Error("this browser has no WebAssembly: the model cannot run here " +
                        "(the precomputed explorer above still works)");
      }
      const response = await fetch(modelBase + "manifest.json");
      if (!response.ok) throw new Error(`${modelBase}manifest.json: HTTP ${response.status}`);
      const manifest = await response.json();
      const wanted = ["encoder.onnx", "decoder.onnx", "weights.bin"];
      const total = wanted.reduce((n, f) => n + manifest.files[f].bytes, 0);
      let done = 0;
      progress(0, total);
      const files = {};
      for (const name of wanted) {
        const sha = manifest.files[name].sha256;
        files[name] = await fetchBytes(modelBase + name, sha, (n) => { done += n; progress(done, total); });
        const digest = await sha256(files[name]);
        if (digest && digest !== sha) {
          throw new Error(`${modelBase}${name} does not match manifest.json's checksum: the ` +
                          `site holds files of two builds; reload the page later`);
        }
      }
      if (typeof ort === "undefined") await loadScript(ortBase + "ort.wasm.min.js");
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmPaths = ortBase;
      const options = {executionProviders: ["wasm"], graphOptimizationLevel: "all",
                       externalData: [{path: "weights.bin", data: files["weights.bin"]}]};
      const encoder = await ort.InferenceSession.create(files["encoder.onnx"], options);
      const decoder = await ort.InferenceSession.create(files["decoder.onnx"], options);
      return new BrowserModel(manifest, encoder, decoder, total);
    }

    constructor(manifest, encoder, decoder, bytes) {
      this.manifest = manifest;
      this.cfg = manifest.config;
      this.ids = manifest.special_ids;
      this.decoding = manifest.decoding;
      this.encoder = encoder;
      this.decoder = decoder;
      this.bytes = bytes;
      const s = this.ids;
      this.bpe = new window.BPE(manifest.vocabulary, manifest.scores,
                                [s.pad, s.bos, s.eos, s.unk], s.unk);
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

    async greedy(src) {
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
      }
      const ids = prefix.slice(1);
      if (ids.length && ids[ids.length - 1] === eos) ids.pop();
      return ids;
    }

    async beam(src, k = this.decoding.beam_size, alpha = this.decoding.alpha) {
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
      }
      let best = finished[0];
      for (const f of finished) if (f[0] > best[0]) best = f;      // first of equals
      return best[1];
    }

    /* Every attention map of one teacher-forced pass over src and [BOS] + out:
       {kind: [layer][head][query][key]} (the recorder's stacked(kind)[:, 0]). */
    async attention(src, out) {
      const enc = await this.encode(src);
      const tgt = [this.ids.bos].concat(out);
      const dec = await this.step([tgt], enc.memory, src);
      const tensors = {"encoder.self": enc.attention, "decoder.self": dec.self_attention,
                       "decoder.cross": dec.cross_attention};
      const maps = {};
      for (const [kind, t] of Object.entries(tensors)) {
        const [L, , H, Q, K] = t.dims;                              // (layers, 1, heads, q, k)
        maps[kind] = Array.from({length: L}, (_, l) => Array.from({length: H}, (_, h) =>
          Array.from({length: Q}, (_, q) =>
            Array.from(t.data.subarray(((l * H + h) * Q + q) * K, ((l * H + h) * Q + q + 1) * K)))));
      }
      return {maps, source: src.map((i) => this.piece(i)), target: tgt.map((i) => this.piece(i))};
    }

    /* Greedy and beam translations of text, with their times in ms. */
    async translate(text) {
      const src = this.sourceIds(text);
      const result = {source: src};
      for (const [name, search] of [["greedy", () => this.greedy(src)], ["beam", () => this.beam(src)]]) {
        const start = performance.now();
        const ids = await search();
        result[name] = {ids, text: this.detokenize(ids), ms: performance.now() - start};
      }
      return result;
    }
  }

  // ------------------------------------------------------------------ the page
  const EXAMPLE = "A little girl is playing with a red ball in the park.";

  function el(tag, attrs = {}, text = "") {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text) e.textContent = text;
    return e;
  }

  function labels(tokens) {
    return tokens.map((t, i) => `${i}:${t}`);
  }

  function mib(bytes) {
    return (bytes / 2 ** 20).toFixed(1) + " MiB";
  }

  class TranslatorWidget {
    constructor(root) {
      this.root = root;
      // absolute: onnxruntime resolves its wasm paths against its own script's URL
      this.modelBase = new URL(root.dataset.model, document.baseURI).href;
      this.ortBase = new URL(root.dataset.ort, document.baseURI).href;
      this.model = null;
      root.textContent = "";
      this.intro = el("p", {class: "lt-intro"});
      this.button = el("button", {type: "button", class: "lt-load"}, "Download the model");
      this.bar = el("progress", {class: "lt-progress", max: "1", value: "0", hidden: ""});
      this.status = el("p", {class: "lt-status", role: "status"});
      this.form = el("form", {class: "lt-form", hidden: ""});
      this.input = el("input", {type: "text", class: "lt-input", "aria-label": "English sentence",
                                value: EXAMPLE});
      this.go = el("button", {type: "submit", class: "lt-go"}, "Translate");
      this.form.append(this.input, this.go);
      this.output = el("div", {class: "lt-output"});
      this.controls = el("div", {class: "lt-controls", hidden: ""});
      this.which = el("select", {class: "lt-which", "aria-label": "translation to explore"});
      [["beam", "beam 4"], ["greedy", "greedy"]].forEach(([v, t]) => this.which.append(el("option", {value: v}, t)));
      this.kind = el("select", {class: "lt-kind", "aria-label": "attention kind"});
      KINDS.forEach(([k, name]) => this.kind.append(el("option", {value: k}, name)));
      this.slider = el("input", {type: "range", class: "lt-head", min: "0", max: "0", value: "0",
                                 "aria-label": "layer and head"});
      this.sliderLabel = el("span", {class: "lt-head-label"});
      this.controls.append(this.which, this.kind, this.slider, this.sliderLabel);
      this.plotBox = el("div", {class: "lt-plot-box"});
      this.plot = el("div", {class: "lt-plot"});
      this.plotBox.append(this.plot);
      root.append(this.intro, this.button, this.bar, this.status, this.form, this.output,
                  this.controls, this.plotBox);
      this.button.addEventListener("click", () => this.load());
      this.form.addEventListener("submit", (e) => { e.preventDefault(); this.run(); });
      for (const c of [this.which, this.kind]) c.addEventListener("change", () => this.draw());
      this.slider.addEventListener("input", () => this.draw());
      let narrow = null;                       // redraw when the layout changes (a phone turned)
      window.addEventListener("resize", () => {
        if ((this.root.clientWidth < 600) !== narrow) { narrow = this.root.clientWidth < 600; this.draw(); }
      });
      this.describe();
    }

    describe() {     // the size comes with the page (data-bytes): no model bytes yet
      const bytes = Number(this.root.dataset.bytes || 0);
      this.intro.textContent = "The model of chapter 7 can run in this page, on your own " +
        "sentence. Press the button to download it once (the browser keeps it), then type English.";
      // data-bytes: the model and the WebAssembly runtime together (book/_ext/browser_model.py)
      if (bytes) this.button.textContent = `Download the model and its runtime (${mib(bytes)})`;
    }

    error(message) {
      this.status.textContent = message;
      this.status.classList.add("lt-error");
    }

    async load() {
      this.button.disabled = true;
      this.bar.hidden = false;
      this.status.classList.remove("lt-error");
      try {
        this.model = await BrowserModel.load(this.modelBase, this.ortBase, (done, total) => {
          this.bar.max = total;
          this.bar.value = done;
          this.status.textContent = `downloading the model: ${mib(done)} of ${mib(total)}`;
        });
      } catch (e) {
        this.button.disabled = false;
        this.bar.hidden = true;
        return this.error(`The model could not be loaded: ${e.message}`);
      }
      this.bar.hidden = true;
      this.button.hidden = true;
      const c = this.model.cfg;
      this.ready = `model ready (${mib(this.model.bytes)}; ${c.n_encoder_layers}+` +
        `${c.n_decoder_layers} layers, ${c.n_heads} heads, d_model ${c.d_model}, running ` +
        `in WebAssembly on one thread). Type an English sentence:`;
      this.status.textContent = this.ready;
      this.form.hidden = false;
      this.input.focus();
    }

    async run() {
      this.status.classList.remove("lt-error");      // an earlier error no longer stands
      this.status.textContent = this.ready;
      this.go.disabled = true;
      this.output.textContent = "translating...";
      try {
        const r = await this.model.translate(this.input.value);
        this.result = r;
        this.output.textContent = "";
        for (const [name, label] of [["greedy", "greedy"], ["beam", "beam 4, \u03b1 = 0.6"]]) {
          const line = el("p", {class: `lt-${name}`});
          line.append(el("strong", {}, `${label}: `), el("span", {class: "lt-text"}, r[name].text),
                      el("span", {class: "lt-time"}, ` (${Math.round(r[name].ms)} ms)`));
          this.output.append(line);
        }
        const reason = doubt(r.source.slice(0, -1), this.model.ids.unk, r.beam.text);
        if (reason) this.output.append(el("p", {class: "lt-unsure"}, `The model is unsure: ${reason}.`));
        this.maps = {};
        for (const name of ["beam", "greedy"]) {
          this.maps[name] = await this.model.attention(r.source, r[name].ids);
        }
        const c = this.model.cfg;
        this.slider.max = String(Math.max(c.n_encoder_layers, c.n_decoder_layers) * c.n_heads - 1);
        this.controls.hidden = false;
        this.draw();
      } catch (e) {
        this.output.textContent = "";
        this.error(e.message);
      } finally {
        this.go.disabled = false;
      }
    }

    /* One heatmap, drawn like the precomputed explorer (Viridis, 0..1, the same hover). */
    draw() {
      if (!this.maps) return;
      const ex = this.maps[this.which.value];
      const [kind, name, qSide, kSide] = KINDS.find((k) => k[0] === this.kind.value);
      const H = this.model.cfg.n_heads;
      const step = Number(this.slider.value);
      const layer = Math.floor(step / H), head = step % H;
      const stack = ex.maps[kind];
      const ys = labels(ex[qSide]), xs = labels(ex[kSide]);
      const z = layer < stack.length ? stack[layer][head] : ys.map(() => xs.map(() => NaN));
      this.sliderLabel.textContent = `layer ${layer + 1}, head ${head + 1}`;
      const trace = {type: "heatmap", z, x: xs, y: ys, zmin: 0, zmax: 1, colorscale: "Viridis",
                     colorbar: {title: {text: "attention weight"}},
                     hovertemplate: "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"};
      let layout = {
        title: {text: `Your sentence: ${name}, layer ${layer + 1}, head ${head + 1}`,
                font: {size: 16}},
        // every token labelled (plotly would skip every second one on a long sentence);
        // the map grows with the sentence so that the labels stay apart
        xaxis: {title: {text: `key: ${kSide} token (attended to)`}, tickangle: -60,
                type: "category", automargin: true, tickfont: {size: 11},
                tickmode: "array", tickvals: xs, ticktext: xs},
        yaxis: {title: {text: `query: ${qSide} token (attending)`}, autorange: "reversed",
                type: "category", automargin: true, tickfont: {size: 11},
                tickmode: "array", tickvals: ys, ticktext: ys},
        height: Math.max(620, 260 + 13 * ys.length), margin: {t: 60, l: 10, r: 10, b: 10},
      };
      // on a phone, the book's figures' layout (phone_layout.js): colour bar below, etc.
      const width = this.plot.clientWidth || this.root.clientWidth;
      if (width < 600 && window.bookPhoneLayout) layout = window.bookPhoneLayout([trace], layout, width);
      window.Plotly.react(this.plot, [trace], layout, {responsive: true, displaylogo: false});
    }
  }

  window.BrowserModel = BrowserModel;
  window.translationDoubt = doubt;
  window.TranslatorWidget = TranslatorWidget;
  function start() {
    const root = document.getElementById("live-translator");
    if (root) window.liveTranslator = new TranslatorWidget(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
