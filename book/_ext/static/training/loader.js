/* Chapter 4's training panel, as the page carries it: a button with the size of the
 * download; the panel's code (panel.js and its worker) and TensorFlow.js load only when
 * the reader presses it. The element <div id="train-panel"> gets from the build
 * data-static (the path to _static), data-files (each file's size, SHA-256 and part) and
 * data-bytes (what pressing the button downloads, book/_ext/book_training.py). */
import {el, mib, whenReady} from "../lib/dom.js";
import {book} from "../lib/namespace.js";

function mount(root) {
  const button = el("button", {type: "button", class: "tp-open",
    text: `Open the training panel (downloads ${mib(Number(root.dataset.bytes))}: TensorFlow.js and the panel)`});
  button.addEventListener("click", async () => {
    button.disabled = true;
    button.textContent = "Loading the panel…";
    root.before(el("link", {rel: "stylesheet", href: new URL("panel.css", import.meta.url).href}));
    try {
      const panel = await import("./panel.js");
      book.training = panel.mount(root, button);   // the open panel, which the tests drive
    } catch (e) {
      button.textContent = `The panel could not be loaded (${e.message})`;
    }
  });
  root.append(button);
}

whenReady(() => document.querySelectorAll("#train-panel").forEach(mount));
