/* The translator's Web Worker (a module worker): the runtime, the model and every search,
 * off the page's thread, so that the page stays responsive while it translates.
 *
 * Requests (lib/worker_server.js: one at a time, in order): "load", "encode", "translate";
 * each answered by any number of {id, type: "progress", ...} then one of {id, type: "done",
 * ...}, {id, type: "error", message} or {id, type: "cancelled"}. A "translate" cancels the
 * one before it at its next decoding step. One worker holds one model: the page starts a new
 * worker for another model and keeps this one until that one has loaded. */
import {Cancelled, serve} from "../lib/worker_server.js";
import {BrowserModel} from "./session.js";

let model = null;
let latest = 0;                          // the newest translate request's id

// a task boundary (not a microtask): messages from the page get in between two steps
const channel = new MessageChannel();
const waiting = [];
channel.port1.onmessage = () => waiting.shift()();
const nextTask = () => new Promise((resolve) => { waiting.push(resolve); channel.port2.postMessage(0); });

function loaded() {
  if (!model) throw new Error("the model is not loaded yet");
  return model;
}

async function load(message, reply) {
  if (model) throw new Error("this worker has a model: start another for another model");
  model = await BrowserModel.load(message, (done, total) => reply.post("progress", {done, total}));
  return {info: model.info()};
}

function encode({sentences}) {
  return {ids: sentences.map((s) => loaded().bpe.encode(s))};
}

async function translate({id, text}, reply) {
  loaded();
  if (id !== latest) throw new Cancelled();
  let lastPost = 0;
  const {maps, ...result} = await model.translate(text, async (search, ids) => {
    await nextTask();
    if (id !== latest) throw new Cancelled();
    const now = performance.now();
    if (now - lastPost > 250) {            // progress four times a second at most
      lastPost = now;
      reply.post("progress", {search, tokens: ids.length, text: model.detokenize(ids)});
    }
  });
  reply.post("progress", {result});
  await nextTask();
  if (id !== latest) throw new Cancelled();
  // the maps session.js computed for doubt's coverage, moved (not copied) to the page
  reply.transfer.push(...Object.values(maps).flatMap((m) => Object.values(m.maps).map((t) => t.data.buffer)));
  return {result, maps};
}

serve({load, encode, translate}, {
  serial: true,                          // one search at a time on the sessions
  arrived: ({id, type}) => { if (type === "translate") latest = id; },
});
