/* Chapter 4's training panel: the reader picks a toy task and a model, trains it in the
 * page and watches every head's attention change.
 *
 * Loaded only when the reader opens the panel (loader.js). The model trains in a Web
 * Worker (worker.js), so the page keeps drawing; this module only builds the controls,
 * sends the settings and draws what the worker reports: the loss and the sequence
 * accuracy, and every attention map of one fixed example (encoder self, decoder self,
 * decoder over the source) every few steps. Afterwards the reader types an input and sees
 * the output and its attention.
 *
 * `attentionBook.training` is the open panel (its `ask(type, data)` talks to the worker;
 * `progress`, `result` and `maps` are what it last reported): tests/test_page_training.py
 * drives it.
 */
import {el} from "../lib/dom.js";
import {followWidth} from "../lib/resize.js";
import {requireWebAssembly} from "../lib/webassembly.js";
import {WorkerClient} from "../lib/worker_client.js";
import {drawCurve, drawMap} from "./drawing.js";

const WORKER = new URL("worker.js", import.meta.url).href;
const SYMBOLS = "abcdefghij";
const CHOICES = {
  task: [["reverse", "reverse"], ["copy", "copy"], ["sort", "sort"]],
  layers: [[1, "1"], [2, "2"]],
  n_heads: [[1, "1"], [2, "2"], [4, "4"]],
  d_model: [[16, "16"], [32, "32"], [64, "64"]],
  positional: [["sinusoidal", "sinusoidal"], ["none", "none"]],
};
const LABELS = {task: "Task", layers: "Layers each side", n_heads: "Heads",
                d_model: "Width d_model", positional: "Positions"};
// What the panel starts with (book/results/page_training.json: how long it takes).
const START = {task: "reverse", layers: 1, n_heads: 4, d_model: 32, positional: "sinusoidal"};
// Fixed: sequences of 8 of 10 symbols, Adam at 3e-3, batches of 64, stop at 99%.
const FIXED = {symbols: SYMBOLS.length, length: 8, lr: 3e-3, batch: 64, max_steps: 1500,
               target: 0.99, seed: 0, report_every: 5, eval_every: 25, maps_every: 10};
// Questions, not answers: they are chapter 4's exercises 1-4, whose answers are folded.
const EXPERIMENTS = [
  ["Exercise 1: without positional encoding, can the model still learn to reverse?",
   {task: "reverse", positional: "none"}],
  ["Exercise 2: can the model learn to sort without positions?",
   {task: "sort", positional: "none"}],
  ["Exercise 3: is one head enough to copy, and what will its map over the source look like?",
   {task: "copy", n_heads: 1}],
  ["Exercise 4: with four heads in each of two layers, does one head do the reversal, or " +
   "several? Which of them draw the anti-diagonal?", {task: "reverse", layers: 2, n_heads: 4, d_model: 32}],
];
const FRAME_BUDGET_MS = 6;          // of map drawing a frame; the rest waits for the next
const KINDS = [["decoder.cross", "Decoder attention over the source"],
               ["encoder.self", "Encoder self-attention"],
               ["decoder.self", "Decoder self-attention (masked)"]];

const label = (id) => id === 1 ? "<bos>" : id === 2 ? "<eos>" : id >= 4 ? SYMBOLS[id - 4] : "?";

class Panel {
  constructor(root, opener) {
    this.root = root;
    this.static = root.dataset.static;
    this.files = JSON.parse(root.dataset.files);
    this.progress = [];
    this.result = null;
    this.maps = null;
    this.queue = [];
    this.curveSize = [300, 150];
    this.build();
    if (opener) opener.remove();
    // the maps' canvases are sized by their boxes: placed again at a new width
    followWidth(this.root, () => { if (this.maps) { this.mapsDirty = true; this.redraw(); } });
    try {
      requireWebAssembly("the panel (the figures above were computed when the book was built)");
    } catch (e) {
      this.fail(e.message);
      return;
    }
    this.client = new WorkerClient(WORKER);
    this.client.worker.addEventListener("error", (e) => this.fail(e.message || "the training worker failed to start"));
    this.status("Loading TensorFlow.js…");
    this.ready = this.ask("load", {files: this.files, base: new URL("tfjs/", new URL(this.static, document.baseURI)).href}).then((info) => {
      this.backend = {backend: info.backend, simd: info.simd, version: info.version};
      this.train.disabled = false;
      this.status(`Ready (TensorFlow.js ${info.version}, ${info.backend}${info.simd ? " SIMD" : ""} backend, ` +
                  `in a Web Worker). Choose a model and press Train.`);
      return info;
    }, (err) => { this.fail(err.message); throw err; });
  }

  build() {
    const controls = el("form", {class: "tp-controls"});
    this.select = {};
    for (const [name, options] of Object.entries(CHOICES)) {
      const s = el("select", {name});
      for (const [value, text] of options) s.appendChild(el("option", {value: String(value), text}));
      s.value = String(START[name]);
      this.select[name] = s;
      controls.appendChild(el("label", {}, el("span", {text: LABELS[name]}), s));
    }
    this.train = el("button", {type: "submit", class: "tp-train", text: "Train"});
    this.train.disabled = true;
    this.stop = el("button", {type: "button", class: "tp-stop", text: "Stop"});
    this.stop.disabled = true;
    controls.appendChild(el("div", {class: "tp-buttons"}, this.train, this.stop));
    controls.addEventListener("submit", (e) => { e.preventDefault(); this.start(); });
    this.stop.addEventListener("click", () => this.client.tell("stop"));

    this.statusLine = el("p", {class: "tp-status", "aria-live": "polite"});
    this.curve = el("canvas", {class: "tp-curve", role: "img",
                               "aria-label": "training loss and sequence accuracy against the step"});
    this.mapsBox = el("div", {class: "tp-maps"});
    this.grids = {};
    for (const [kind, title] of KINDS) {
      const grid = el("div", {class: "tp-grid"});
      this.grids[kind] = grid;
      this.mapsBox.appendChild(el("figure", {class: "tp-kind", "data-kind": kind},
                                  el("figcaption", {text: title}), grid));
    }
    this.mapsCaption = el("p", {class: "tp-caption"});

    this.input = el("input", {class: "tp-input", maxlength: "8", autocomplete: "off",
                              spellcheck: "false", "aria-label": "an input of 8 letters from a to j"});
    this.run = el("button", {type: "submit", class: "tp-run", text: "Run"});
    this.run.disabled = true;
    this.output = el("output", {class: "tp-output"});
    const tryForm = el("form", {class: "tp-try"},
                       el("label", {}, el("span", {text: "Your input (8 letters, a to j)"}), this.input),
                       this.run, this.output);
    tryForm.addEventListener("submit", (e) => { e.preventDefault(); this.tryInput(); });

    const list = el("ul", {class: "tp-experiments"});
    for (const [question, settings] of EXPERIMENTS) {
      const b = el("button", {type: "button", class: "tp-setup", text: "Set up"});
      b.addEventListener("click", () => {
        for (const [k, v] of Object.entries(Object.assign({}, START, settings))) this.select[k].value = String(v);
      });
      list.appendChild(el("li", {}, el("span", {text: question + " "}), b));
    }
    this.root.append(controls, this.statusLine, this.curve, this.mapsCaption, this.mapsBox, tryForm,
                     el("p", {class: "tp-caption", text: "Experiments to try (each sets the controls; predict, then press Train):"}),
                     list);
    this.root.classList.add("tp-open-panel");
  }

  status(text) { this.statusLine.textContent = text; }

  fail(message) {
    this.statusLine.textContent = message;
    this.statusLine.classList.add("tp-error");
  }

  /* A request to the training worker: resolves with its "done" message. */
  ask(type, data, onProgress) {
    return this.client.ask(type, data, onProgress);
  }

  settings() {
    const s = Object.assign({}, FIXED);
    for (const [name, select] of Object.entries(this.select)) {
      s[name] = typeof START[name] === "number" ? Number(select.value) : select.value;
    }
    return s;
  }

  async start() {
    const s = this.settings();
    this.progress = [];
    this.result = null;
    this.statusLine.classList.remove("tp-error");
    this.train.disabled = true;
    this.run.disabled = true;
    this.stop.disabled = false;
    Object.values(this.select).forEach((x) => { x.disabled = true; });
    this.output.textContent = "";
    this.status("Training…");
    const onProgress = (m) => {
      if (m.type === "progress") {
        this.progress.push({step: m.step, loss: m.loss, accuracy: m.accuracy, seconds: m.seconds});
        this.status(`step ${m.step}: loss ${m.loss.toFixed(3)}, sequence accuracy ${(m.accuracy * 100).toFixed(1)}% ` +
                    `on 500 held-out sequences, ${m.seconds.toFixed(1)} s`);
      } else if (m.type === "maps") {
        this.showMaps(m.maps, m.example.src, m.example.tgtIn, `the fixed example after ${m.step} steps`);
      }
      this.redraw();
    };
    try {
      const r = await this.ask("train", {settings: s}, onProgress);
      this.result = r;
      const how = r.reached ? `reached ${(s.target * 100).toFixed(0)}% after ${r.reached.step} steps in ${r.reached.seconds.toFixed(1)} s`
        : r.stopped ? `stopped after ${r.step} steps` : `did not reach ${(s.target * 100).toFixed(0)}% in ${r.step} steps`;
      // an input is worth typing once the model has learnt the task; before, train on
      const next = r.reached ? "Type an input below." : "Press Train to train it further (an " +
        "input typed below shows what it does so far).";
      this.status(`${r.parameters.toLocaleString("en")} parameters, ${how}: loss ${r.loss.toFixed(3)}, ` +
                  `sequence accuracy ${(r.accuracy * 100).toFixed(1)}%. ${next}`);
      this.run.disabled = false;
      if (!this.input.value) this.input.value = "abcdefgh";
    } catch (err) {
      this.fail(err.message);
    } finally {
      this.train.disabled = false;
      this.stop.disabled = true;
      Object.values(this.select).forEach((x) => { x.disabled = false; });
    }
  }

  async tryInput() {
    const text = this.input.value.trim().toLowerCase();
    if (text.length !== FIXED.length || [...text].some((c) => !SYMBOLS.includes(c))) {
      this.output.textContent = `Type exactly ${FIXED.length} letters from a to j (got "${text}").`;
      this.output.classList.add("tp-error");
      return;
    }
    this.output.classList.remove("tp-error");
    const r = await this.ask("run", {symbols: [...text].map((c) => SYMBOLS.indexOf(c))});
    const out = r.output.map(label);
    this.output.textContent = `→ ${out.filter((t) => t !== "<eos>").join("")}` +
      (out[out.length - 1] === "<eos>" ? "" : " (no <eos> at the end)");
    this.showMaps(r.maps, r.src, r.tgtIn, `your input "${text}" and the model's output`);
    this.redraw();
  }

  showMaps(maps, src, tgtIn, what) {
    this.maps = {maps, rows: Array.from(tgtIn, label), cols: Array.from(src, label), what};
    this.mapsDirty = true;
  }

  /* Draw at the next frame, once for any number of messages before it: the curve, then
   * the maps, a few milliseconds' worth a frame (a map's first drawing, which makes its
   * canvas, costs most), so that no frame waits long. */
  redraw() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const start = performance.now();
      if (this.mapsDirty) { this.mapsDirty = false; this.queue = this.placeMaps(); }
      drawCurve(this.curve, this.curveSize[0], this.curveSize[1], this.progress, FIXED.max_steps, FIXED.batch);
      while (this.queue.length && performance.now() - start < FRAME_BUDGET_MS) drawMap(...this.queue.shift());
      if (this.queue.length) this.redraw();
    });
  }

  /* The maps' canvases (made when their number changes) and what each shows: a list of
   * drawMap's arguments, the sizes read once (a size read after a write would make the
   * browser lay out the page again). */
  placeMaps() {
    const {maps, rows, cols, what} = this.maps;
    this.mapsCaption.textContent = `Every head's attention on ${what}: rows are the ` +
      `decoder's queries (▸ is <bos>), columns the keys; darker is more weight.`;
    const jobs = [];
    for (const [kind] of KINDS) {
      const grid = this.grids[kind], layers = maps[kind] || [];
      const q = kind.startsWith("decoder") ? rows : cols;
      const k = kind === "decoder.self" ? rows : cols;
      const wanted = layers.reduce((n, heads) => n + heads.length, 0);
      if (grid.children.length !== wanted) {
        grid.replaceChildren(...layers.flatMap((heads, l) => heads.map((_, h) =>
          el("figure", {class: "tp-map"}, el("canvas", {}), el("figcaption", {text: `layer ${l + 1}, head ${h + 1}`})))));
      }
      let i = 0;
      layers.forEach((heads) => heads.forEach((w) => jobs.push([grid.children[i++].firstChild, w, q, k])));
    }
    this.curveSize = [this.curve.clientWidth || 300, this.curve.clientHeight || 150];
    jobs.forEach((job) => job.splice(1, 0, job[0].clientWidth || 120));
    return jobs;
  }
}

/* The panel in `root`, replacing the button that opened it (loader.js). */
export function mount(root, opener) {
  return new Panel(root, opener);
}
