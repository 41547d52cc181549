/* Chapter 9's translator: the widget of the page, talking to its Web Worker (worker.js).
 *
 * The model, the runtime and the search run in the worker, so that scrolling and typing
 * go on while it translates. The widget shows the download size before anything is
 * fetched (data-bytes), the download's progress, each search's tokens so far and its
 * partial translation, then both translations and every attention map; a new request
 * cancels the one still running. A model that fails to load leaves the one before it
 * working. The page element: <div id="live-translator" data-model="URL/" data-ort="URL/">,
 * to which the build adds data-bytes, data-files and data-format (book/_ext/book_translator.py).
 */
import {afterPaint, el, mib, whenReady} from "../lib/dom.js";
import {totalBytes} from "../lib/downloads.js";
import {book} from "../lib/namespace.js";
import {narrow as isNarrow} from "../lib/phone.js";
import {phoneLayout} from "../lib/phone_layout.js";
import {followWidth} from "../lib/resize.js";
import {requireWebAssembly} from "../lib/webassembly.js";
import {Cancelled, WorkerClient} from "../lib/worker_client.js";
import {doubt} from "./doubt.js";
import {KINDS, axisNames, axisTicks, axisTitle, axisTitles, mapFrame, tickLabels} from "./map.js";
import {mountOwnModel} from "./own_model.js";

const WORKER = new URL("worker.js", import.meta.url).href;
const EXAMPLE = "A little girl is playing with a red ball in the park.";
const LABELS_AT_ONCE = 24;       // a map of more tokens a side is drawn in two tasks

/* The widest of texts in plotly's font at size px (a canvas measures without layout). */
let canvas = null;
function textWidth(texts, size) {
  canvas = canvas || document.createElement("canvas").getContext("2d");
  canvas.font = `${size}px "Open Sans", verdana, arial, sans-serif`;
  return Math.max(0, ...texts.map((t) => canvas.measureText(t).width));
}

export class TranslatorWidget {
  constructor(root) {
    this.root = root;
    // absolute: onnxruntime resolves its wasm paths against its own script's URL
    this.modelBase = new URL(root.dataset.model, document.baseURI).href;
    this.ortBase = new URL(root.dataset.ort, document.baseURI).href;
    this.files = JSON.parse(root.dataset.files || "null");
    this.format = Number(root.dataset.format);
    this.model = null;
    this.client = null;
    this.runs = 0;                           // translations asked for (the last one is shown)
    this.draws = 0;                          // maps drawn (the last one is shown)
    this.drawn = false;                      // the last map's drawing is done
    root.textContent = "";
    this.intro = el("p", {class: "lt-intro"});
    this.button = el("button", {type: "button", class: "lt-load", text: "Download the model"});
    this.bar = el("progress", {class: "lt-progress", max: "1", value: "0", hidden: ""});
    this.status = el("p", {class: "lt-status", role: "status"});
    this.form = el("form", {class: "lt-form", hidden: ""});
    this.input = el("input", {type: "text", class: "lt-input", "aria-label": "English sentence",
                              value: EXAMPLE});
    this.go = el("button", {type: "submit", class: "lt-go", text: "Translate"});
    this.form.append(this.input, this.go);
    this.output = el("div", {class: "lt-output"});
    this.controls = el("div", {class: "lt-controls", hidden: ""});
    this.which = el("select", {class: "lt-which", "aria-label": "translation to explore"});
    this.kind = el("select", {class: "lt-kind", "aria-label": "attention kind"});
    KINDS.forEach(([k, name]) => this.kind.append(el("option", {value: k, text: name})));
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
    // a phone turned, a window narrowed: across the phone layout's switch, draw anew at
    // the box's new width, and within one layout the map follows its box (plotly's
    // responsive resize hears only the window's resize event: lib/resize.js)
    followWidth(this.plotBox, () => {
      if (this.drawnNarrow === undefined) return;
      if (isNarrow(this.plotBox.clientWidth) !== this.drawnNarrow) this.draw();   // as draw() reads it
      else if (this.plot._fullLayout) Plotly.Plots.resize(this.plot);
    });
    this.describe();
  }

  /* The bytes of a group of the page's download list (data-files: model, runtime, code). */
  bytes(...groups) {
    return totalBytes(Object.fromEntries(groups.map((g) => [g, (this.files || {})[g] || {}])));
  }

  describe() {     // the size comes with the page (data-bytes): no model bytes yet
    const bytes = Number(this.root.dataset.bytes || 0);
    this.intro.textContent = "The model of chapter 7 can run in this page, on your own " +
      "sentence. Press the button to download it once (the browser keeps it for your next " +
      "visit), then type English.";
    if (bytes) this.button.textContent = `Download the model and its runtime (${mib(bytes)})`;
  }

  error(message) {
    this.status.textContent = message;
    this.status.classList.add("lt-error");
  }

  /* A request to the model's worker (Cancelled when a newer translation replaced it). */
  ask(type, body = {}, onProgress = () => {}) {
    if (!this.client) return Promise.reject(new Error("no model is loaded"));
    return this.client.ask(type, body, onProgress);
  }

  /* Load the book's model, or `local`, the reader's ({name: bytes}, own_model.js), in a new
     worker. Resolves with null once it is the one that translates, or with the Error that
     stopped it: then the model before it (if any) goes on translating. */
  async load(local = null) {
    const before = {client: this.client, model: this.model};
    this.button.disabled = true;
    this.status.classList.remove("lt-error");
    let client = null;
    try {
      requireWebAssembly("the model");
      client = new WorkerClient(WORKER);
      this.bar.hidden = false;
      const done = await client.ask("load", {modelBase: this.modelBase, ortBase: this.ortBase,
                                             files: this.files, format: this.format, local},
        (m) => {
          this.bar.max = m.total;
          this.bar.value = m.done;
          this.status.textContent = `downloading ${local ? "the runtime" : "the model and its runtime"}: ` +
            `${mib(m.done)} of ${mib(m.total)}`;
        });
      this.model = done.info;
    } catch (e) {
      if (client) client.terminate();
      this.bar.hidden = true;
      const what = `${local ? "Your" : "The book's"} model could not be loaded: ${e.message}`;
      if (before.client) {                       // the model before goes on
        this.status.textContent = `${what}. ${this.ready}`;
        this.status.classList.add("lt-error");
      } else {
        this.button.disabled = false;
        this.error(what.replace("The book's", "The"));
      }
      return e;
    }
    if (before.client) before.client.terminate();
    this.client = client;
    this.bar.hidden = true;
    this.button.hidden = true;
    const c = this.model.cfg, d = this.model.decoding;
    this.names = {greedy: "greedy", beam: `beam ${d.beam_size}, \u03b1 = ${d.alpha}`};
    this.which.replaceChildren(el("option", {value: "beam", text: `beam ${d.beam_size}`}),
                               el("option", {value: "greedy", text: "greedy"}));
    this.ready = `${local ? "your " : ""}model ready (${mib(this.model.bytes)}; ${c.n_encoder_layers}+` +
      `${c.n_decoder_layers} layers, ${c.n_heads} heads, d_model ${c.d_model}, ` +
      `${this.model.weights} weights, running in WebAssembly on one thread, beside the ` +
      "page). Type an English sentence:";
    this.status.textContent = this.ready;
    this.output.replaceChildren();
    this.controls.hidden = true;
    this.maps = null;
    this.form.hidden = false;
    this.input.focus();
    return null;
  }

  /* Translate the box's text; a request still running is cancelled by the worker. */
  async run() {
    this.status.classList.remove("lt-error");      // an earlier error no longer stands
    this.status.textContent = this.ready;
    this.result = null;
    this.maps = null;
    // the progress line has a fixed size (translator.css: contain), so that rewriting it
    // a few times a second does not lay the whole chapter out again
    const partial = el("p", {class: "lt-partial", text: "translating..."});
    this.output.replaceChildren(partial);
    const names = this.names;
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
      this.output.append(el("p", {class: `lt-${name}`}, el("strong", {text: `${names[name]}: `}),
                            el("span", {class: "lt-text", text: r[name].text}),
                            el("span", {class: "lt-time", text: ` (${Math.round(r[name].ms)} ms)`})));
    }
    // doubt.js on each search's translation: one note where both doubt for the same reason
    // (unknown input), else one for each translation in doubt
    const reasons = ["greedy", "beam"].filter((name) => r[name].doubt);
    if (reasons.length === 2 && r.greedy.doubt === r.beam.doubt) {
      this.output.append(el("p", {class: "lt-unsure", text: `The model is unsure: ${r.beam.doubt}.`}));
    } else {
      for (const name of reasons) {
        this.output.append(el("p", {class: "lt-unsure", "data-search": name,
                                    text: `The model is unsure of the ${names[name]} translation: ${r[name].doubt}.`}));
      }
    }
  }

  /* One heatmap, drawn like the precomputed explorer (Viridis, 0..1, the same hover), its
     labels and margins from map.js. A change of layout (the phone's, or the desktop's)
     draws the figure anew: plotly.react from one to the other kept margins pushed for the
     other layout's colour bar, and every later draw failed with "Something went wrong
     with axis scaling". */
  draw() {
    if (!this.maps) return;
    const ex = this.maps[this.which.value];
    const [kind, name, qSide, kSide] = KINDS.find((k) => k[0] === this.kind.value);
    const H = this.model.cfg.n_heads;
    const step = Number(this.slider.value);
    const layer = Math.floor(step / H), head = step % H;
    const {dims: [L, , Q, K], data} = ex.maps[kind];        // (layers, heads, q, k)
    const ys = axisNames(ex, qSide, qSide === "target"), xs = axisNames(ex, kSide);
    const titles = axisTitles(kind);
    const at = (layer * H + head) * Q * K;
    const z = layer < L ? ys.map((_, q) => Array.from(data.subarray(at + q * K, at + (q + 1) * K)))
      : ys.map(() => xs.map(() => NaN));
    this.sliderLabel.textContent = `layer ${layer + 1}, head ${head + 1}`;
    const width = this.plotBox.clientWidth || this.root.clientWidth;
    const narrow = isNarrow(width);
    const {tick, titleSize, titlePad, height, margin, fit} = mapFrame(xs, ys, width, narrow, textWidth);
    this.fit = fit;
    const trace = {type: "heatmap", z, x: xs, y: ys, zmin: 0, zmax: 1, colorscale: "Viridis",
                   colorbar: {title: {text: "attention weight"}, tickmode: "array",
                              tickvals: [0, 0.25, 0.5, 0.75, 1], ticktext: ["0", "0.25", "0.5", "0.75", "1"]},
                   hovertemplate: "query %{y}<br>key %{x}<br>weight %{z:.3f}<extra></extra>"};
    const xticks = tickLabels(xs, 0, xs.length - 1, fit.x);
    const yticks = tickLabels(ys, 0, ys.length - 1, fit.y);
    let layout = {
      // the title below the toolbar's row (plotly's modebar, top right; map.js), left-aligned
      title: {text: `Your sentence: ${name}, layer ${layer + 1}, head ${head + 1}`, font: {size: 16},
              x: 0, xanchor: "left", xref: "container", y: 1, yanchor: "top", yref: "container",
              pad: {t: titlePad, l: narrow ? 4 : 10}},
      xaxis: Object.assign({title: {text: axisTitle(titles.x, xticks), font: {size: titleSize}},
                            tickangle: -60, type: "category", automargin: false,
                            tickfont: {size: tick}}, axisTicks(xticks)),
      yaxis: Object.assign({title: {text: axisTitle(titles.y, yticks), font: {size: titleSize}},
                            autorange: "reversed", type: "category", automargin: false,
                            tickfont: {size: tick}}, axisTicks(yticks)),
      height, margin,
    };
    // on a phone, the book's figures' layout (lib/phone_layout.js): colour bar below, etc.;
    // its margins shrink to what labels need, which these margins already are
    if (narrow) {
      layout = phoneLayout([trace], layout, width);
      layout.margin.l = margin.l;
      layout.margin.r = margin.r;
    }
    const config = {responsive: true, displaylogo: false};
    this.ticks = {xs, ys, xaxis: titles.x, yaxis: titles.y};
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
    (fresh ? Plotly.newPlot : Plotly.react)(this.plot, [trace], layout, config);
    if (fresh) this.plot.on("plotly_relayout", (e) => this.relabel(e));   // a zoom
    const done = () => { if (mine === this.draws) this.drawn = true; };
    if (!pieces) return done();
    setTimeout(() => {
      if (mine !== this.draws) return;                 // a newer draw took over
      Plotly.relayout(this.plot, {"xaxis.tickvals": labelled.xaxis.tickvals,
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
    if (Object.keys(update).length) Plotly.relayout(this.plot, update);
  }
}

whenReady(() => {
  const root = document.getElementById("live-translator");
  if (!root) return;
  book.translator = new TranslatorWidget(root);
  book.doubt = doubt;                      // the page's rule, for the tests to compare
  mountOwnModel(root, book.translator);
});
