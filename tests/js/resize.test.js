// lib/resize.js: the one way the page's code follows a box's width, over a stand-in
// ResizeObserver that reports what a test says the boxes' sizes became.
import {test} from "node:test";
import assert from "node:assert/strict";
import {followWidth, widthWatcher} from "../../book/_ext/static/lib/resize.js";

class StandIn {
  static made = [];
  constructor(callback) { this.callback = callback; this.observed = new Set(); StandIn.made.push(this); }
  observe(element) { this.observed.add(element); }
  unobserve(element) { this.observed.delete(element); }
  report(...sizes) {       // [element, width, height]: what the browser would hand over
    this.callback(sizes.map(([target, width, height]) => ({target, contentRect: {width, height}})), this);
  }
}

const watcher = () => { StandIn.made = []; return widthWatcher(StandIn); };

test("a box is reported at each new width, not at a new height alone, nor while hidden", () => {
  const follow = watcher(), box = {}, widths = [];
  follow(box, (w) => widths.push(w));
  const [observer] = StandIn.made;
  assert.ok(observer.observed.has(box));
  observer.report([box, 700, 300]);        // when it starts following
  observer.report([box, 700, 500]);        // its height alone
  observer.report([box, 390, 500]);        // a phone turned
  observer.report([box, 0, 0]);            // hidden
  observer.report([box, 390, 500]);        // shown again
  assert.deepEqual(widths, [700, 390, 390]);
});

test("one observer serves every box; each box's followers hear only their box", () => {
  const follow = watcher(), a = {}, b = {}, heard = [];
  follow(a, (w) => heard.push(["a", w]));
  follow(b, (w) => heard.push(["b", w]));
  assert.equal(StandIn.made.length, 1);
  StandIn.made[0].report([a, 500, 1], [b, 800, 1]);
  StandIn.made[0].report([b, 600, 1]);
  assert.deepEqual(heard, [["a", 500], ["b", 800], ["b", 600]]);
});

test("a second follower of a box hears its width now; stopping unobserves the last", async () => {
  const follow = watcher(), box = {}, first = [], second = [];
  const stopFirst = follow(box, (w) => first.push(w));
  const observer = StandIn.made[0];
  observer.report([box, 640, 1]);
  const stopSecond = follow(box, (w) => second.push(w));
  await Promise.resolve();
  assert.deepEqual(second, [640]);
  stopFirst();
  observer.report([box, 320, 1]);
  assert.deepEqual(first, [640]);
  assert.deepEqual(second, [640, 320]);
  assert.ok(observer.observed.has(box));
  stopSecond();
  assert.ok(!observer.observed.has(box));
  observer.report([box, 100, 1]);
  assert.deepEqual(second, [640, 320]);
});

test("without a ResizeObserver (Node has none) nothing is followed, and nothing fails", () => {
  assert.equal(typeof globalThis.ResizeObserver, "undefined");
  const stop = followWidth({}, () => assert.fail("called"));
  stop();
  const stopToo = widthWatcher(undefined)({}, () => assert.fail("called"));
  stopToo();
});
