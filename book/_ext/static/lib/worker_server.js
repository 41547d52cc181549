/* The worker's side of a widget's Web Worker (a module worker); the page's side is
 * worker_client.js.
 *
 * serve(handlers, options) answers each {id, type, ...} message with handlers[type]:
 * called with the message and a reply, {id, post(type, body, transfer), transfer}, it may
 * post any number of {id, type: "progress" | "maps", ...} meanwhile; what it returns (an
 * object) is posted as {id, type: "done", ...result}, with the buffers it pushed onto
 * reply.transfer; what it throws as {id, type: "error", message}, or {id, type: "cancelled"}
 * for a Cancelled. A type with no handler is an error.
 *
 * options: notes, the handlers of messages that need no answer ({type} without an id:
 * "stop"), run as they arrive; arrived(message), called as each request arrives, before it
 * waits its turn; serial, to run one request at a time, in the order they came (otherwise
 * a request runs as it arrives, so that a note gets in between the steps of a long one);
 * scope, where messages come from and go to (the worker's global scope). */

export class Cancelled extends Error {}

export function serve(handlers, {notes = {}, arrived = () => {}, serial = false, scope = globalThis} = {}) {
  let running = Promise.resolve();
  const answer = async (message) => {
    const {id, type} = message;
    const reply = {
      id,
      transfer: [],
      post: (kind, body = {}, transfer = []) => scope.postMessage(Object.assign({id, type: kind}, body), transfer),
    };
    try {
      if (!Object.hasOwn(handlers, type)) throw new Error(`unknown request ${type}`);
      const result = await handlers[type](message, reply);
      reply.post("done", result, reply.transfer);
    } catch (e) {
      if (e instanceof Cancelled) reply.post("cancelled");
      else reply.post("error", {message: String((e && e.message) || e)});
    }
  };
  scope.addEventListener("message", (event) => {
    const message = event.data;
    if (Object.hasOwn(notes, message.type) && message.id === undefined) {
      notes[message.type](message);
      return;
    }
    arrived(message);
    if (serial) running = running.then(() => answer(message));
    else answer(message);
  });
}
