/* Chapter 9's translator with the reader's own model: the folder that
 * `python -m transformer export CHECKPOINT --out DIR` wrote, chosen with a file picker or
 * dropped on the box. The files are read in the page and handed to the translator's
 * worker (widget.js `load(local)`); nothing leaves the reader's machine. Once a model of
 * the reader's runs, a button brings the book's back.
 *
 * Before anything runs, the files are checked against the export's manifest.json
 * (manifest.js: its format, its fields, and each file's size and SHA-256), so that a
 * missing, damaged or mismatched file gets one message naming it, not an error from deep
 * in the runtime; a file the runtime still cannot read (a cut graph listed as it is) gets
 * that message, and the model before it goes on translating. */
import {sha256} from "../lib/cached_fetch.js";
import {el, mib} from "../lib/dom.js";
import {checkedFiles, parseManifest} from "./manifest.js";

/* {name: ArrayBuffer} of the export's files among `files` (File objects, any folder), or
 * an Error whose message says what is wrong with them. */
export async function readExport(files, format) {
  const byName = {};
  for (const f of files) byName[f.name] = f;
  if (!byName["manifest.json"]) {
    throw new Error("the model folder lacks manifest.json: choose every file that " +
                    "`python -m transformer export` wrote (or drop the folder)");
  }
  const manifest = parseManifest(await byName["manifest.json"].text(), format);
  const local = await checkedFiles(manifest, byName, (bytes) => sha256(bytes));
  local["manifest.json"] = await byName["manifest.json"].arrayBuffer();
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

export function mountOwnModel(root, widget) {
  const runtime = widget.bytes("runtime", "code");
  const text = el("p", {}, "Or explore your own model: choose the files that ",
                  el("code", {text: "python -m transformer export"}),
                  " wrote (manifest.json, the graphs and the weights), or drop its folder here. " +
                  "They are read in this page; nothing leaves your machine. Running it " +
                  `downloads the model's runtime (${mib(runtime)}) unless your browser kept it ` +
                  "from an earlier visit.");
  const input = el("input", {type: "file", class: "lt-own-files", "aria-label": "your exported model's files"});
  input.multiple = true;
  const message = el("p", {class: "lt-own-status", role: "status"});
  const back = el("button", {type: "button", class: "lt-book-model", hidden: "",
                             text: `Back to the book's model (${mib(widget.bytes("model"))} unless kept)`});
  const box = el("div", {class: "lt-own"}, text, input, back, message);
  root.after(box);

  const use = async (files) => {
    message.classList.remove("lt-error");
    message.textContent = "reading your model's files…";
    try {
      const local = await readExport(files, widget.format);
      message.textContent = "";
      const failed = await widget.load(local);
      if (failed) throw failed;
      message.textContent = `loaded your model (${files.length} files chosen)`;
      back.hidden = false;
    } catch (e) {
      message.textContent = `Your model could not be loaded: ${e.message}`;
      message.classList.add("lt-error");
    }
  };
  back.addEventListener("click", async () => {
    back.disabled = true;
    message.classList.remove("lt-error");
    const failed = await widget.load(null);
    back.disabled = false;
    if (failed) {
      message.textContent = widget.status.textContent;
      message.classList.add("lt-error");
    } else {
      back.hidden = true;
      message.textContent = "the book's model is back";
    }
  });
  input.addEventListener("change", () => use(Array.from(input.files)));
  for (const target of [box, root]) {
    target.addEventListener("dragover", (e) => { e.preventDefault(); box.classList.add("lt-drop"); });
    target.addEventListener("dragleave", () => { box.classList.remove("lt-drop"); });
    target.addEventListener("drop", async (e) => {
      e.preventDefault();
      box.classList.remove("lt-drop");
      use(await droppedFiles(e.dataTransfer));
    });
  }
}
