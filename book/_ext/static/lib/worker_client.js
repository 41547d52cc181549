/* The page's side of a widget's Web Worker (a module worker).
 *
 * ask(type, body, onProgress) sends {id, type, ...body} and resolves with the worker's
 * {id, type: "done", ...} for that id, rejects with its {type: "error", message}, or with
 * Cancelled for {type: "cancelled"}; any other message for that id ("progress", "maps")
 * goes to onProgress meanwhile. A worker that fails rejects every request still open. */

export class Cancelled extends Error {}

export class WorkerClient {
  constructor(url, {makeWorker = (u) => new Worker(u, {type: "module"})} = {}) {
    this.worker = makeWorker(url);
    this.pending = new Map();
    this.lastId = 0;
    this.worker.onmessage = (e) => this.receive(e.data);
    this.worker.onerror = (e) => this.fail(new Error(e.message || "the worker failed to start"));
  }

  ask(type, body = {}, onProgress = () => {}) {
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, {resolve, reject, onProgress});
      this.worker.postMessage(Object.assign({id, type}, body));
    });
  }

  /* A message that needs no answer ("stop"). */
  tell(type, body = {}) {
    this.worker.postMessage(Object.assign({type}, body));
  }

  receive(m) {
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.type === "done") {
      this.pending.delete(m.id);
      p.resolve(m);
    } else if (m.type === "error") {
      this.pending.delete(m.id);
      p.reject(new Error(m.message));
    } else if (m.type === "cancelled") {
      this.pending.delete(m.id);
      p.reject(new Cancelled("replaced by a newer request"));
    } else {
      p.onProgress(m);
    }
  }

  fail(error) {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  terminate() {
    this.worker.terminate();
    this.fail(new Cancelled("the worker was stopped"));
  }
}
