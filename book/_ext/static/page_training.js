/* Chapter 4's training panel: the reader picks a toy task and a model, trains it in the
 * page and watches every head's attention change.
 *
 * Loaded only when the reader opens the panel (the page's inline loader, written by
 * book/_ext/page_training.py). The model trains in a Web Worker (train_worker.js), so the
 * page keeps drawing; this file only builds the controls, sends the settings and draws
 * what the worker reports: the loss and the sequence accuracy, and every attention map
 * of one fixed example (encoder self, decoder self, decoder over the source) every few
 * steps. Afterwards the reader types an input and sees the output and its attention.
 *
 * `window.pageTraining` is the open panel (its `ask(type, data)` talks to the worker;
 * `progress`, `result` and `maps` are what it last reported): tests/test_page_training.py
 * drives it.
 */
(function () {
  "use strict";

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
  const EXPERIMENTS = [
    ["Without positional encoding reversal cannot be learnt: the encoder sees a bag of " +
     "symbols, so no head can find the mirror position.", {task: "reverse", positional: "none"}],
    ["Sorting needs no positions: where a symbol goes follows from the symbols themselves.",
     {task: "sort", positional: "none"}],
    ["One head is enough for copying: its map is the diagonal.", {task: "copy", n_heads: 1}],
    ["More heads split the work: with four heads in two layers, which of them draw the " +
     "anti-diagonal?", {task: "reverse", layers: 2, n_heads: 4, d_model: 32}],
  ];
  const FRAME_BUDGET_MS = 6;          // of map drawing a frame; the rest waits for the next
  const KINDS = [["decoder.cross", "Decoder attention over the source"],
                 ["encoder.self", "Encoder self-attention"],
                 ["decoder.self", "Decoder self-attention (causal)"]];

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children) if (c) e.appendChild(c);
    return e;
  }

  const label = (id) => id === 1 ? "<bos>" : id === 2 ? "<eos>" : id >= 4 ? SYMBOLS[id - 4] : "?";

  /* White to dark blue, for weights in [0, 1]. */
  function colour(w) {
    const t = Math.max(0, Math.min(1, w));
    const mix = (a, b) => Math.round(a + (b - a) * t);
    return `rgb(${mix(247, 8)},${mix(251, 48)},${mix(255, 107)})`;
  }

  /* One attention map (rows: queries, columns: keys) with its tokens along the edges,
   * `width` CSS pixels wide (read by the caller: reading a size after a write would make
   * the browser lay out the page again, once per map). */
  function drawMap(canvas, width, weights, rows, cols) {
    const dpr = window.devicePixelRatio || 1;
    const margin = 14, cell = (width - margin) / cols.length;
    const height = margin + cell * rows.length;
    canvas.style.height = `${height}px`;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, height);
    for (let i = 0; i < rows.length; i++) {
      for (let j = 0; j < cols.length; j++) {
        g.fillStyle = colour(weights[i * cols.length + j]);
        g.fillRect(margin + j * cell, margin + i * cell, Math.ceil(cell), Math.ceil(cell));
      }
    }
    g.fillStyle = "#333";
    g.font = `${Math.min(11, Math.max(8, cell * 0.9))}px sans-serif`;
    g.textAlign = "center";
    g.textBaseline = "middle";
    const short = (t) => t === "<bos>" ? "▸" : t === "<eos>" ? "◂" : t;
    cols.forEach((t, j) => g.fillText(short(t), margin + (j + 0.5) * cell, margin / 2));
    rows.forEach((t, i) => g.fillText(short(t), margin / 2, margin + (i + 0.5) * cell));
  }

  /* The loss (log scale, left) and the sequence accuracy (0-1, right) against the step. */
  function drawCurve(canvas, width, height, progress, maxSteps) {
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    const g = canvas.getContext("2d");
    g.scale(dpr, dpr);
    const left = 40, right = 40, top = 10, bottom = 28;
    const w = width - left - right, h = height - top - bottom;
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, height);
    g.strokeStyle = "#999";
    g.strokeRect(left, top, w, h);
    const last = progress.length ? progress[progress.length - 1].step : 1;
    const xmax = Math.max(50, Math.min(maxSteps, Math.ceil(last * 1.25 / 50) * 50));
    const x = (s) => left + w * s / xmax;
    const lo = Math.log10(1e-3), hi = Math.log10(5);
    const yLoss = (l) => top + h * (hi - Math.log10(Math.max(1e-3, Math.min(5, l)))) / (hi - lo);
    const yAcc = (a) => top + h * (1 - a);
    const line = (colour, y, key) => {
      g.strokeStyle = colour;
      g.lineWidth = 1.5;
      g.beginPath();
      progress.forEach((p, i) => (i ? g.lineTo : g.moveTo).call(g, x(p.step), y(p[key])));
      g.stroke();
    };
    line("#1f77b4", yLoss, "loss");
    line("#ff7f0e", yAcc, "accuracy");
    g.fillStyle = "#333";
    g.font = "10px sans-serif";
    g.textAlign = "center";
    g.fillText(`step (batch of ${FIXED.batch})`, left + w / 2, height - 4);
    g.fillText("0", x(0), top + h + 10);
    g.fillText(String(xmax), x(xmax) - 8, top + h + 10);
    g.textAlign = "right";
    g.fillStyle = "#1f77b4";
    for (const v of [1, 0.1, 0.01, 0.001]) g.fillText(String(v), left - 3, yLoss(v) + 3);
    g.textAlign = "left";
    g.fillStyle = "#ff7f0e";
    for (const v of [0, 0.5, 1]) g.fillText(`${v * 100}%`, left + w + 3, yAcc(v) + 3);
    g.save();
    g.translate(10, top + h / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.fillStyle = "#1f77b4";
    g.fillText("loss", 0, 0);
    g.restore();
    g.save();
    g.translate(width - 4, top + h / 2);
    g.rotate(-Math.PI / 2);
    g.textAlign = "center";
    g.fillStyle = "#ff7f0e";
    g.fillText("sequence accuracy", 0, 0);
    g.restore();
  }

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
      this.pending = new Map();
      this.next = 1;
      this.build();
      if (opener) opener.remove();
      window.addEventListener("resize", () => { if (this.maps) { this.mapsDirty = true; this.redraw(); } });
      if (typeof Worker === "undefined" || typeof WebAssembly !== "object") {
        this.fail("this browser cannot run a Web Worker with WebAssembly: the panel cannot train here " +
                  "(the figures above were computed when the book was built)");
        return;
      }
      this.worker = new Worker(this.static + "train_worker.js");
      this.worker.onmessage = (e) => this.receive(e.data);
      this.worker.onerror = (e) => this.fail(e.message || "the training worker failed to start");
      this.status("Loading TensorFlow.js…");
      this.ready = this.ask("load", {files: this.files, base: "tfjs/"}).then((info) => {
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
      this.stop.addEventListener("click", () => this.worker.postMessage({type: "stop"}));

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
      for (const [claim, settings] of EXPERIMENTS) {
        const b = el("button", {type: "button", class: "tp-setup", text: "Set up"});
        b.addEventListener("click", () => {
          for (const [k, v] of Object.entries(Object.assign({}, START, settings))) this.select[k].value = String(v);
        });
        list.appendChild(el("li", {}, el("span", {text: claim + " "}), b));
      }
      this.root.append(controls, this.statusLine, this.curve, this.mapsCaption, this.mapsBox, tryForm,
                       el("p", {class: "tp-caption", text: "Experiments to try (each sets the controls; then press Train):"}),
                       list);
      this.root.classList.add("tp-open-panel");
    }

    status(text) { this.statusLine.textContent = text; }

    fail(message) {
      this.statusLine.textContent = message;
      this.statusLine.classList.add("tp-error");
    }

    ask(type, data, onProgress) {
      const id = this.next++;
      return new Promise((resolve, reject) => {
        this.pending.set(id, {resolve, reject, onProgress});
        this.worker.postMessage(Object.assign({id, type}, data));
      });
    }

    receive(msg) {
      const job = this.pending.get(msg.id);
      if (!job) return;
      if (msg.type === "done") { this.pending.delete(msg.id); job.resolve(msg); }
      else if (msg.type === "error") { this.pending.delete(msg.id); job.reject(new Error(msg.message)); }
      else if (job.onProgress) job.onProgress(msg);
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
        this.status(`${r.parameters.toLocaleString("en")} parameters, ${how}: loss ${r.loss.toFixed(3)}, ` +
                    `sequence accuracy ${(r.accuracy * 100).toFixed(1)}%. Type an input below.`);
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
        drawCurve(this.curve, this.curveSize[0], this.curveSize[1], this.progress, FIXED.max_steps);
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

  window.PageTrainingPanel = {
    mount(root, opener) {
      const panel = new Panel(root, opener);
      window.pageTraining = panel;
      return panel;
    },
  };
})();
