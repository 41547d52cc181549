// The figures' phone layout (lib/phone_layout.js), the tick labels of log axes
// (figures/tidy.js) and of the translator's map (translator/map.js): pure functions.
import {test} from "node:test";
import assert from "node:assert/strict";
import {phoneLayout, wrap} from "../../book/_ext/static/lib/phone_layout.js";
import {PHONE_PX, narrow} from "../../book/_ext/static/lib/phone.js";
import {barEnds, depth, logTicks, numberText} from "../../book/_ext/static/figures/tidy.js";
import {axisNames, mapFrame, tickLabels} from "../../book/_ext/static/translator/map.js";

test("the phone's switch", () => {
  assert.equal(PHONE_PX, 600);
  assert.ok(narrow(390) && !narrow(600));
});

test("a legend and a colour bar go below the plot, panels are stacked", () => {
  const data = [{type: "scatter", name: "a", xaxis: "x", yaxis: "y"}, {type: "scatter", name: "b", xaxis: "x2", yaxis: "y2"},
                {type: "heatmap", z: [[1]], colorbar: {title: {text: "w"}}}];
  const layout = {height: 400, xaxis: {domain: [0, 0.45]}, xaxis2: {domain: [0.55, 1]}, yaxis: {}, yaxis2: {anchor: "x2"},
                  title: {text: "A title far too long to stand on one line of a phone's narrow screen"}};
  const out = phoneLayout(data, layout, 390);
  assert.equal(out.legend.orientation, "h");
  assert.equal(data[2].colorbar.orientation, "h");
  assert.deepEqual(out.xaxis.domain, [0, 1]);
  assert.deepEqual(out.xaxis2.domain, [0, 1]);
  assert.ok(out.yaxis.domain[0] >= out.yaxis2.domain[1] || out.yaxis2.domain[0] >= out.yaxis.domain[1]);
  assert.match(out.title.text, /<br>/);
  assert.ok(out.height > 400);
  assert.deepEqual(layout.xaxis.domain, [0, 0.45]);              // the figure's own layout is kept
});

test("titles wrap at spaces", () => {
  assert.equal(wrap("one two three", 7), "one two<br>three");
  assert.equal(wrap("short", 10), "short");
});

test("a log axis within one power of ten is labelled with numbers", () => {
  const ticks = logTicks({range: [Math.log10(0.3), Math.log10(3)], _length: 300}, 30);
  assert.ok(ticks.includes(1) && ticks.some((v) => v < 1) && ticks.some((v) => v > 1), ticks);
  assert.deepEqual(ticks.map(numberText).slice(0, 2).every((t) => /^\d/.test(t)), true);
  assert.equal(numberText(2e19), "2×10<sup>19</sup>");
  assert.equal(numberText(0.5), "0.5");
});

test("a colour bar whose labels stop short of an end gets both ends and its middle", () => {
  // a constant map: plotly's range is the value +- 0.5, labelled at 0 and 0.5 only
  assert.deepEqual(barEnds(-0.457, 0.543, [0, 0.5]), [-0.4, 0, 0.5]);
  assert.deepEqual(barEnds(0, 1, [0, 0.5]), [0, 0.5, 1]);           // the 1 of a map missing
  assert.deepEqual(barEnds(12.3, 47.9, [20, 30]), [13, 30, 47]);
  assert.equal(barEnds(0, 1, [0, 0.5, 1]), null);                    // both ends reached
  assert.equal(barEnds(-0.46, 0.54, [-0.4, 0, 0.4]), null);          // within a quarter
  assert.equal(barEnds(undefined, 1, []), null);                     // no range known
  assert.equal(barEnds(0, 3e6, [NaN, NaN]), null);                   // "1×10^6": not judged
  assert.deepEqual(barEnds(0, 1, []), [0, 0.5, 1]);                  // no label at all
});

test("two squares overlap by their depth", () => {
  const square = (x) => [[x, 0], [x + 10, 0], [x + 10, 10], [x, 10]];
  assert.equal(depth(square(0), square(5)), 5);
  assert.equal(depth(square(0), square(20)), 0);
});

test("the map labels at most 40 tokens an axis, the first always, and names rows by the token they predict", () => {
  const names = Array.from({length: 100}, (_, i) => `${i}`);
  const t = tickLabels(names);
  assert.ok(t.tickvals.length <= 40 && t.tickvals[0] === "0" && t.stride === 3, t);
  assert.equal(tickLabels(names.slice(0, 10)).stride, 1);
  const ex = {target: ["⟨s⟩", "Ein", "Hund"], source: ["▁A", "▁dog", "⟨/s⟩"]};
  assert.deepEqual(axisNames(ex, "target", true), ["0:→Ein", "1:→Hund", "2:→⟨/s⟩"]);
  assert.deepEqual(axisNames(ex, "source"), ["0:▁A", "1:▁dog", "2:⟨/s⟩"]);
  const frame = mapFrame(["a"], ["b"], 390, true, (texts) => 10 * Math.max(...texts.map((s) => s.length)));
  assert.ok(frame.margin.l > 0 && frame.height >= 420);
});
