// The worker's side of a widget's worker (lib/worker_server.js), talking to the page's side
// (lib/worker_client.js) over a fake pair of message ports.
import {test} from "node:test";
import assert from "node:assert/strict";
import {Cancelled as Replaced, WorkerClient} from "../../book/_ext/static/lib/worker_client.js";
import {Cancelled, serve} from "../../book/_ext/static/lib/worker_server.js";

/* A client and a worker scope wired to each other; each message crosses in its own task. */
function pair() {
  const scope = {listeners: [], posted: [],
                 addEventListener(type, f) { this.listeners.push(f); },
                 postMessage(m, transfer) { this.posted.push([m.type, transfer]);
                                            setTimeout(() => worker.onmessage({data: m})); }};
  const worker = {postMessage: (m) => setTimeout(() => scope.listeners.forEach((f) => f({data: m})))};
  return {scope, client: new WorkerClient("w.js", {makeWorker: () => worker})};
}

const tick = () => new Promise((resolve) => setTimeout(resolve));

test("a handler's progress, result and transferred buffers reach its own request", async () => {
  const {scope, client} = pair();
  const buffer = new ArrayBuffer(8);
  serve({
    load: async ({n}, reply) => {
      reply.post("progress", {done: 1});
      reply.post("maps", {step: 0});
      reply.transfer.push(buffer);
      return {info: n + 1};
    },
    fail: () => { throw new Error("bad input"); },
    drop: () => { throw new Cancelled(); },
  }, {scope});
  const seen = [];
  assert.equal((await client.ask("load", {n: 41}, (m) => seen.push(m.type))).info, 42);
  assert.deepEqual(seen, ["progress", "maps"]);
  assert.deepEqual(scope.posted.find(([type]) => type === "done")[1], [buffer]);
  await assert.rejects(client.ask("fail"), /bad input/);
  await assert.rejects(client.ask("drop"), Replaced);
  await assert.rejects(client.ask("nothing"), /unknown request nothing/);
});

test("a note gets in between the steps of a running request; serial requests wait their turn", async () => {
  const {scope, client} = pair();
  let stop = false;
  serve({train: async () => { let steps = 0; while (!stop) { steps++; await tick(); } return {steps}; }},
        {scope, notes: {stop: () => { stop = true; }}});
  const training = client.ask("train");
  await tick(); await tick(); await tick();
  client.tell("stop");
  assert.ok((await training).steps >= 1);

  const other = pair();
  const order = [], arrivals = [];
  serve({slow: async () => { await tick(); await tick(); order.push("slow"); return {}; },
         fast: async () => { order.push("fast"); return {}; }},
        {scope: other.scope, serial: true, arrived: (m) => arrivals.push(m.id)});
  await Promise.all([other.client.ask("slow"), other.client.ask("fast")]);
  assert.deepEqual(order, ["slow", "fast"]);
  assert.deepEqual(arrivals, [1, 2]);
});
