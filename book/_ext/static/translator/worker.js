/* The translator's Web Worker (a module worker): the runtime, the model and every search,
 * off the page's thread, so that the page stays responsive while it translates.
 *
 * Messages: {id, type: "load" | "translate" | "encode", ...} in; out, for each id, any
 * number of {id, type: "progress", ...} then one of {id, type: "done", ...},
 * {id, type: "error", message} or {id, type: "cancelled"}. A "translate" cancels the one
 * before it at its next decoding step. One worker holds one model: the page starts a new
 * worker for another model and keeps this one until that one has loaded. */
import {BrowserModel} from "./session.js";

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
  postMessage(Object.assign({id, type}, body), transfer);
}

async function translate(id, text) {
  let lastPost = 0;
  const {maps, ...result} = await model.translate(text, async (search, ids) => {
    await nextTask();
    if (id !== latest) throw new Cancelled();
    const now = performance.now();
    if (now - lastPost > 250) {            // progress four times a second at most
      lastPost = now;
      post(id, "progress", {search, tokens: ids.length, text: model.detokenize(ids)});
    }
  });
  post(id, "progress", {result});
  await nextTask();
  if (id !== latest) throw new Cancelled();
  // the maps session.js computed for doubt's coverage, moved (not copied) to the page
  const transfer = Object.values(maps).flatMap((m) => Object.values(m.maps).map((t) => t.data.buffer));
  post(id, "done", {result, maps}, transfer);
}

addEventListener("message", (event) => {
  const {id, type} = event.data;
  const job = async () => {
    try {
      if (type === "load") {
        if (model) throw new Error("this worker has a model: start another for another model");
        model = await BrowserModel.load(event.data, (done, total) => post(id, "progress", {done, total}));
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
});
