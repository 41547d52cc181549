// The page's side of a widget's worker (lib/worker_client.js) over a fake worker.
import {test} from "node:test";
import assert from "node:assert/strict";
import {Cancelled, WorkerClient} from "../../book/_ext/static/lib/worker_client.js";

function fakeWorker() {
  const w = {sent: [], postMessage(m) { this.sent.push(m); }, terminate() { this.ended = true; }};
  return w;
}

test("answers, progress, errors and cancellations reach their own request", async () => {
  const w = fakeWorker();
  const client = new WorkerClient("w.js", {makeWorker: () => w});
  const seen = [];
  const a = client.ask("load", {x: 1}, (m) => seen.push(m.done));
  const b = client.ask("translate", {});
  const c = client.ask("translate", {});
  assert.deepEqual(w.sent.map((m) => [m.id, m.type]), [[1, "load"], [2, "translate"], [3, "translate"]]);
  w.onmessage({data: {id: 1, type: "progress", done: 5}});
  w.onmessage({data: {id: 1, type: "done", info: "ok"}});
  w.onmessage({data: {id: 2, type: "cancelled"}});
  w.onmessage({data: {id: 3, type: "error", message: "bad input"}});
  assert.equal((await a).info, "ok");
  assert.deepEqual(seen, [5]);
  await assert.rejects(b, Cancelled);
  await assert.rejects(c, /bad input/);
});

test("a worker that fails rejects every open request", async () => {
  const w = fakeWorker();
  const client = new WorkerClient("w.js", {makeWorker: () => w});
  const a = client.ask("load");
  w.onerror({message: "SyntaxError in worker.js"});
  await assert.rejects(a, /SyntaxError/);
  const b = client.ask("load");
  client.terminate();
  await assert.rejects(b, Cancelled);
  assert.ok(w.ended);
});
