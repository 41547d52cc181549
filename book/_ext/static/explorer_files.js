/* Chapter 9's translator with the reader's own model: the folder that
 * `python -m transformer export CHECKPOINT --out DIR` wrote, chosen with a file picker or
 * dropped on the box. The files are read in the page and handed to the translator's
 * worker (translator.js `load(local)`); nothing leaves the reader's machine.
 *
 * Before anything runs, the files are checked against the export's manifest.json (its
 * format, its fields, and each file's size and SHA-256), so that a missing, damaged or
 * mismatched file gets one message naming it, not an error from deep in the runtime.
 */
(function () {
  "use strict";

  const NEEDED = ["manifest.json", "encoder.onnx", "decoder.onnx", "weights.bin"];
  const FORMAT = 1;                      // transformer/tools/export.py's FORMAT

  const sha256 = (bytes) => window.bookFetch.sha256(bytes);    // cached_fetch.js

  /* {name: ArrayBuffer} of the export's files among `files` (File objects, any folder),
   * or an Error whose message says what is wrong with them. */
  async function readExport(files) {
    const byName = {};
    for (const f of files) byName[f.name] = f;
    const missing = NEEDED.filter((n) => !byName[n]);
    if (missing.length) {
      throw new Error(`the model folder lacks ${missing.join(", ")}: choose every file that ` +
                      "`python -m transformer export` wrote (or drop the folder)");
    }
    let manifest;
    try {
      manifest = JSON.parse(await byName["manifest.json"].text());
    } catch (e) {
      throw new Error(`manifest.json is not JSON (${e.message}): is it the export's?`);
    }
    if (!manifest || manifest.format !== FORMAT) {
      throw new Error(`manifest.json has format ${manifest && manifest.format}, this page ` +
                      `reads format ${FORMAT}: export the model again with this book's package`);
    }
    for (const field of ["config", "special_ids", "decoding", "vocabulary", "scores", "files"]) {
      if (!manifest[field]) throw new Error(`manifest.json has no "${field}": is it the export's?`);
    }
    const local = {"manifest.json": await byName["manifest.json"].arrayBuffer()};
    for (const name of NEEDED.slice(1)) {
      const entry = manifest.files[name];
      if (!entry) throw new Error(`manifest.json does not list ${name}`);
      const bytes = await byName[name].arrayBuffer();
      if (bytes.byteLength !== entry.bytes) {
        throw new Error(`${name} has ${bytes.byteLength.toLocaleString("en")} bytes, manifest.json ` +
                        `says ${entry.bytes.toLocaleString("en")}: the file is damaged or from another export`);
      }
      const digest = await sha256(bytes);
      if (digest && digest !== entry.sha256) {
        throw new Error(`${name} does not match manifest.json's checksum: the file is damaged ` +
                        "or from another export");
      }
      local[name] = bytes;
    }
    return local;
  }

  /* Every file of a dropped folder (or the dropped files themselves). */
  async function droppedFiles(transfer) {
    const entries = Array.from(transfer.items || [], (i) => i.webkitGetAsEntry && i.webkitGetAsEntry())
      .filter((e) => e);
    if (!entries.length) return Array.from(transfer.files || []);
    const files = [];
    const walk = async (entry) => {
      if (entry.isFile) {
        files.push(await new Promise((ok, fail) => entry.file(ok, fail)));
      } else if (entry.isDirectory) {
        const reader = entry.createReader();
        for (;;) {
          const batch = await new Promise((ok, fail) => reader.readEntries(ok, fail));
          if (!batch.length) break;
          for (const e of batch) await walk(e);
        }
      }
    };
    for (const e of entries) await walk(e);
    return files;
  }

  function mount(root) {
    const box = document.createElement("div");
    box.className = "lt-own";
    const text = document.createElement("p");
    const command = document.createElement("code");
    command.textContent = "python -m transformer export";
    text.append("Or explore your own model: choose the files that ", command,
                " wrote (manifest.json, encoder.onnx, decoder.onnx, weights.bin), or drop " +
                "its folder here. They are read in this page; nothing leaves your machine.");
    const input = document.createElement("input");
    input.type = "file";
    input.multiple = true;
    input.className = "lt-own-files";
    input.setAttribute("aria-label", "your exported model's files");
    const message = document.createElement("p");
    message.className = "lt-own-status";
    message.setAttribute("role", "status");
    box.append(text, input, message);
    root.after(box);

    const use = async (files) => {
      const widget = window.liveTranslator;
      message.classList.remove("lt-error");
      message.textContent = "reading your model's files…";
      try {
        const local = await readExport(files);
        message.textContent = "";
        widget.output.replaceChildren();
        widget.controls.hidden = true;
        await widget.load(local);
        if (widget.status.classList.contains("lt-error")) {
          message.textContent = widget.status.textContent;
          message.classList.add("lt-error");
        } else {
          message.textContent = `loaded your model (${files.length} files chosen)`;
        }
      } catch (e) {
        message.textContent = `Your model could not be loaded: ${e.message}`;
        message.classList.add("lt-error");
      }
    };
    input.addEventListener("change", () => use(Array.from(input.files)));
    for (const target of [box, root]) {
      target.addEventListener("dragover", (e) => { e.preventDefault(); box.style.outline = "2px dashed #888"; });
      target.addEventListener("dragleave", () => { box.style.outline = ""; });
      target.addEventListener("drop", async (e) => {
        e.preventDefault();
        box.style.outline = "";
        use(await droppedFiles(e.dataTransfer));
      });
    }
  }

  function start() {
    const root = document.getElementById("live-translator");
    if (root && window.liveTranslator) mount(root);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.explorerFiles = {readExport};
})();
