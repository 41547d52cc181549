/* Chapter 9's translator: the widget of the page, talking to a Web Worker.
 *
 * The model, the runtime and the search run in a Web Worker started from
 * browser_model.js (the same file the page loads as a script: one copy of the code), so
 * that scrolling and typing go on while it translates. The widget shows the download size
 * before anything is fetched (data-bytes), the download's progress, each search's tokens
 * so far and its partial translation, then both translations and every attention map; a
 * new request cancels the one still running.
 * The page element: <div id="live-translator" data-model="URL/" data-ort="URL/"
 * data-bytes="N" data-files="{...}"> (the last two written by book/_ext/browser_model.py).
 */
(function () {
  "use strict";

  const KINDS = [   // recorder part, name, query side, key side (as transformer_book.viz)
    ["encoder.self", "encoder self-attention", "source", "source"],
    ["decoder.self", "decoder self-attention (masked)", "target", "target"],
    ["decoder.cross", "encoder-decoder attention", "target", "source"],
  ];
  // the worker's code: browser_model.js beside this file
  const WORKER = new URL("browser_model.js", document.currentScript.src).href;

  class Cancelled extends Error {}

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

  const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));

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
      this.runs = 0;                           // translations asked for (the last one is shown)
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
        "sentence. Press the button to download it once (the browser keeps it for your next " +
        "visit), then type English.";
      // data-bytes: every file the translator downloads (book/_ext/browser_model.py)
      if (bytes) this.button.textContent = `Download the model and its runtime (${mib(bytes)})`;
    }

    error(message) {
      this.status.textContent = message;
      this.status.classList.add("lt-error");
    }

    /* A request to the worker: resolves with its "done" message, rejects with its error
       (Cancelled when a newer translation replaced it); onProgress(message) meanwhile. */
    ask(type, body = {}, onProgress = () => {}) {
      const id = ++this.lastId;
      return new Promise((resolve, reject) => {
        this.pending.set(id, {resolve, reject, onProgress});
        this.worker.postMessage(Object.assign({id, type}, body));
      });
    }

    receive(m) {
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.type === "progress") return p.onProgress(m);
      this.pending.delete(m.id);
      if (m.type === "done") p.resolve(m);
      else if (m.type === "cancelled") p.reject(new Cancelled("replaced by a newer request"));
      else p.reject(new Error(m.message));
    }

    /* `local`: a model the reader chose ({name: bytes}, explorer_files.js), else the book's. */
    async load(local = null) {
      this.button.disabled = true;
      this.status.classList.remove("lt-error");
      try {
        requireWebAssembly();
        if (typeof Worker === "undefined") throw new Error("this browser cannot run a Web Worker");
        const files = JSON.parse(this.root.dataset.files || "null");
        this.bar.hidden = false;
        if (this.worker) this.worker.terminate();
        this.worker = new Worker(WORKER);
        this.pending = new Map();
        this.lastId = 0;
        this.worker.onmessage = (e) => this.receive(e.data);
        this.worker.onerror = (e) => {
          for (const p of this.pending.values()) p.reject(new Error(e.message || "the worker failed"));
          this.pending.clear();
        };
        const done = await this.ask("load", {modelBase: this.modelBase, ortBase: this.ortBase, files, local},
          (m) => {
            this.bar.max = m.total;
            this.bar.value = m.done;
            this.status.textContent = `downloading the model and its runtime: ${mib(m.done)} of ${mib(m.total)}`;
          });
        this.model = done.info;
      } catch (e) {
        if (this.worker) this.worker.terminate();
        this.worker = null;
        this.button.disabled = false;
        this.bar.hidden = true;
        return this.error(`${local ? "Your" : "The"} model could not be loaded: ${e.message}`);
      }
      this.bar.hidden = true;
      this.button.hidden = true;
      const c = this.model.cfg;
      this.ready = `${local ? "your " : ""}model ready (${mib(this.model.bytes)}; ${c.n_encoder_layers}+` +
        `${c.n_decoder_layers} layers, ${c.n_heads} heads, d_model ${c.d_model}, ` +
        `${this.model.weights} weights, running in WebAssembly on one thread, beside the ` +
        `page). Type an English sentence:`;
      this.status.textContent = this.ready;
      this.form.hidden = false;
      this.input.focus();
    }

    /* Translate the box's text; a request still running is cancelled by the worker. */
    async run() {
      this.status.classList.remove("lt-error");      // an earlier error no longer stands
      this.status.textContent = this.ready;
      this.result = null;
      this.maps = null;
      // the progress line has a fixed size (translator.css: contain), so that rewriting it
      // a few times a second does not lay the whole chapter out again
      const partial = el("p", {class: "lt-partial"}, "translating...");
      this.output.replaceChildren(partial);
      const names = {greedy: "greedy", beam: "beam 4, \u03b1 = 0.6"};
      const request = this.ask("translate", {text: this.input.value}, (m) => {
        if (m.result) return this.show(m.result, names);
        partial.textContent = `${names[m.search]}: ${m.tokens} tokens so far: ${m.text.slice(-80)}`;
      });
      const mine = ++this.runs;
      try {
        const done = await request;
        // both translations are on screen (show); the map, the one long task of a translation
        // on this thread, is drawn after the frame that paints them
        await afterPaint();
        if (mine !== this.runs) return;                  // a newer request took over
        this.maps = done.maps;
        this.result = done.result;
        const c = this.model.cfg;
        this.slider.max = String(Math.max(c.n_encoder_layers, c.n_decoder_layers) * c.n_heads - 1);
        this.controls.hidden = false;
        this.draw();
      } catch (e) {
        if (e instanceof Cancelled) return;              // a newer request took over
        this.output.textContent = "";
        this.error(e.message);
      }
    }

    show(r, names) {
      this.output.textContent = "";
      for (const name of ["greedy", "beam"]) {
        const line = el("p", {class: `lt-${name}`});
        line.append(el("strong", {}, `${names[name]}: `), el("span", {class: "lt-text"}, r[name].text),
                    el("span", {class: "lt-time"}, ` (${Math.round(r[name].ms)} ms)`));
        this.output.append(line);
      }
      if (r.doubt) this.output.append(el("p", {class: "lt-unsure"}, `The model is unsure: ${r.doubt}.`));
    }

    /* One heatmap, drawn like the precomputed explorer (Viridis, 0..1, the same hover). */
    draw() {
      if (!this.maps) return;
      const ex = this.maps[this.which.value];
      const [kind, name, qSide, kSide] = KINDS.find((k) => k[0] === this.kind.value);
      const H = this.model.cfg.n_heads;
      const step = Number(this.slider.value);
      const layer = Math.floor(step / H), head = step % H;
      const {dims: [L, , Q, K], data} = ex.maps[kind];        // (layers, heads, q, k)
      const ys = labels(ex[qSide]), xs = labels(ex[kSide]);
      const at = (layer * H + head) * Q * K;
      const z = layer < L ? ys.map((_, q) => Array.from(data.subarray(at + q * K, at + (q + 1) * K)))
        : ys.map(() => xs.map(() => NaN));
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

  window.TranslatorWidget = TranslatorWidget;
  function start() {
    const root = document.getElementById("live-translator");
    if (root) window.liveTranslator = new TranslatorWidget(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
