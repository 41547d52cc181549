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

  const PHONE_PX = 600;            // phone_layout.js's switch to the phone's layout
  const MAX_LABELS = 40;           // tick labels per axis drawn at once (see draw)
  const LABELS_AT_ONCE = 24;       // a map of more tokens a side is drawn in two tasks

  /* The tick labels of an axis of category names, of those from index lo to hi: each one
     where at most MAX_LABELS are, else every k-th (the first always). */
  function tickLabels(names, lo = 0, hi = names.length - 1, most = MAX_LABELS) {
    lo = Math.max(0, Math.ceil(lo));
    hi = Math.min(names.length - 1, Math.floor(hi));
    const stride = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(2, Math.min(most, MAX_LABELS))));
    const vals = [];
    for (let i = lo; i <= hi; i += stride) vals.push(names[i]);
    return {tickmode: "array", tickvals: vals, ticktext: vals, stride};
  }

  const axisTicks = ({tickmode, tickvals, ticktext}) => ({tickmode, tickvals, ticktext});

  /* An axis title that says when only some tokens are labelled. */
  function axisTitle(text, ticks) {
    return ticks.stride > 1 ? `${text} (1 in ${ticks.stride} labelled)` : text;
  }

  /* The widest of texts in plotly's font at size px (a canvas measures without layout). */
  let canvas = null;
  function textWidth(texts, size) {
    canvas = canvas || document.createElement("canvas").getContext("2d");
    canvas.font = `${size}px "Open Sans", verdana, arial, sans-serif`;
    return Math.max(0, ...texts.map((t) => canvas.measureText(t).width));
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
      this.draws = 0;                          // maps drawn (the last one is shown)
      this.drawn = false;                      // the last map's drawing is done
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
      // a phone turned, a window narrowed: across the phone layout's switch, draw anew once
      // the page is laid out at its new width (a window's resize event can come before)
      // and within one layout the map follows its box (the page's own layout can settle
      // after the window's resize event, which is all plotly's responsive resize hears)
      new ResizeObserver(() => {
        if (this.drawnNarrow === undefined) return;
        const narrow = this.plotBox.clientWidth < PHONE_PX;
        if (narrow !== this.drawnNarrow) this.draw();
        else if (this.plot._fullLayout) window.Plotly.Plots.resize(this.plot);
      }).observe(this.plotBox);
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
      // transformer.decoding.doubt on each search's translation: one note where both doubt
      // for the same reason (unknown input), else one for each translation in doubt
      const reasons = ["greedy", "beam"].filter((name) => r[name].doubt);
      if (reasons.length === 2 && r.greedy.doubt === r.beam.doubt) {
        this.output.append(el("p", {class: "lt-unsure"}, `The model is unsure: ${r.beam.doubt}.`));
      } else {
        for (const name of reasons) {
          this.output.append(el("p", {class: "lt-unsure", "data-search": name},
            `The model is unsure of the ${names[name]} translation: ${r[name].doubt}.`));
        }
      }
    }

    /* One heatmap, drawn like the precomputed explorer (Viridis, 0..1, the same hover).
       Its cost is bounded whatever the sentence's length: plotly measures each tick label
       it draws (1-2 ms each), so at most MAX_LABELS per axis are drawn, every token where
       they fit and every k-th one of a longer sentence (hover names every cell; zooming in
       labels every token of the range shown: relabel); the margins are computed here from
       the labels' widths, once, so that plotly lays the figure out in one pass (its
       automargin redraws it until the labels fit). A change of layout (the phone's, below
       600 px, or the desktop's) draws the figure anew: plotly.react from one to the other
       kept margins pushed for the other layout's colour bar, and every later draw failed
       with "Something went wrong with axis scaling". */
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
      const width = this.plotBox.clientWidth || this.root.clientWidth;
      const narrow = width < PHONE_PX;
      const tick = narrow ? 9 : 11, titleSize = narrow ? 12 : 14;
      const trace = {type: "heatmap", z, x: xs, y: ys, zmin: 0, zmax: 1, colorscale: "Viridis",
                     colorbar: {title: {text: "attention weight"}},
                     hovertemplate: "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"};
      // rows of 13 px while every token is labelled; a longer map stays within the screen
      const height = Math.max(narrow ? 420 : 620, 260 + 13 * Math.min(ys.length, MAX_LABELS));
      // as many labels as fit apart (x labels at -60 degrees take 1.4 font sizes each), and
      // the margins they need, from the widest of all (an upper bound of those shown)
      const yLabels = textWidth(ys, tick) + (narrow ? 4 : 6);
      const xLabels = textWidth(xs, tick) * Math.sin(Math.PI / 3) + tick;
      const margin = {t: 60, l: Math.ceil(yLabels + 1.3 * titleSize + 2), r: narrow ? 2 : 110,
                      b: Math.ceil(xLabels + 2.2 * titleSize)};
      this.fit = {x: (width - margin.l - margin.r) / (1.4 * tick),
                  y: (height - margin.t - margin.b - (narrow ? 100 : 0)) / (1.3 * tick)};
      const xticks = tickLabels(xs, 0, xs.length - 1, this.fit.x);
      const yticks = tickLabels(ys, 0, ys.length - 1, this.fit.y);
      let layout = {
        title: {text: `Your sentence: ${name}, layer ${layer + 1}, head ${head + 1}`,
                font: {size: 16}},
        xaxis: Object.assign({title: {text: axisTitle(`key: ${kSide} token`, xticks),
                                      font: {size: titleSize}},
                              tickangle: -60, type: "category", automargin: false,
                              tickfont: {size: tick}}, axisTicks(xticks)),
        yaxis: Object.assign({title: {text: axisTitle(`query: ${qSide} token`, yticks),
                                      font: {size: titleSize}},
                              autorange: "reversed", type: "category", automargin: false,
                              tickfont: {size: tick}}, axisTicks(yticks)),
        height, margin,
      };
      // on a phone, the book's figures' layout (phone_layout.js): colour bar below, etc.;
      // its margins shrink to what labels need, which these margins already are
      if (narrow && window.bookPhoneLayout) {
        const margin = layout.margin;
        layout = window.bookPhoneLayout([trace], layout, width);
        layout.margin.l = margin.l;
        layout.margin.r = margin.r;
      }
      const config = {responsive: true, displaylogo: false};
      this.ticks = {xs, ys, xaxis: `key: ${kSide} token`, yaxis: `query: ${qSide} token`};
      const fresh = narrow !== this.drawnNarrow;           // a new layout: a new figure
      this.drawnNarrow = narrow;
      // a long sentence's map in two tasks: the map, then its labels (an axes-only redraw)
      const pieces = xs.length * ys.length > LABELS_AT_ONCE ** 2;
      const labelled = {xaxis: Object.assign({}, layout.xaxis), yaxis: Object.assign({}, layout.yaxis)};
      if (pieces) for (const axis of ["xaxis", "yaxis"]) Object.assign(layout[axis], {tickvals: [], ticktext: []});
      // plotly's responsive resize sizes the figure to 100% of this element: give it the
      // figure's height (with none, a resize within one layout collapsed it to 0 px)
      this.plot.style.height = `${layout.height}px`;
      const mine = ++this.draws;
      this.drawn = false;
      (fresh ? window.Plotly.newPlot : window.Plotly.react)(this.plot, [trace], layout, config);
      if (fresh) this.plot.on("plotly_relayout", (e) => this.relabel(e));   // a zoom
      const done = () => { if (mine === this.draws) this.drawn = true; };
      if (!pieces) return done();
      setTimeout(() => {
        if (mine !== this.draws) return;                 // a newer draw took over
        window.Plotly.relayout(this.plot, {"xaxis.tickvals": labelled.xaxis.tickvals,
          "xaxis.ticktext": labelled.xaxis.ticktext, "yaxis.tickvals": labelled.yaxis.tickvals,
          "yaxis.ticktext": labelled.yaxis.ticktext});
        done();
      });
    }

    /* After a zoom (or its reset): the labels of the range shown, every token where they fit. */
    relabel(event) {
      const fl = this.plot._fullLayout;
      if (!this.ticks || !fl || !Object.keys(event).some((k) => /axis\.(range|autorange)/.test(k))) return;
      const update = {};
      const {xs, ys} = this.ticks;
      for (const [axis, names] of [["xaxis", xs], ["yaxis", ys]]) {
        const [a, b] = fl[axis].range;
        const range = Math.abs(b - a) / (axis === "xaxis" ? xs.length : ys.length);
        const t = tickLabels(names, Math.min(a, b), Math.max(a, b), this.fit[axis[0]] / range);
        if (JSON.stringify(t.tickvals) === JSON.stringify(fl[axis].tickvals)) continue;
        update[`${axis}.tickvals`] = t.tickvals;
        update[`${axis}.ticktext`] = t.ticktext;
        update[`${axis}.title.text`] = axisTitle(this.ticks[axis], t);
      }
      if (Object.keys(update).length) window.Plotly.relayout(this.plot, update);
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
