/* Texts of a drawn figure moved apart: plotly places tick labels, axis titles and labels
 * of points itself, and only the drawn figure tells which of them collide or are cut off.
 * logTicks, numberText and depth are pure (tests/js/layout.test.js). */
/* ---------------------------------------------------------------- after a draw
 * plotly places tick labels, axis titles and labels of points itself; only the drawn
 * figure tells which of them collide or are cut off. Each pass measures every text (its
 * box turned with it) and changes what collides, up to a few passes:
 *   - tick labels on top of each other: fewer ticks (a log axis: 1-9 between powers of
 *     ten, then 1, 2, 5, then powers of ten; within less than a power of ten: plain
 *     numbers, 0.4 0.5 0.6, not the digits 4 5 6);
 *   - a category axis that skipped every other name: every name, turned upright and
 *     smaller, where there is room for 8 px letters;
 *   - an axis title on its tick labels: the title moved away (standoff; automargin makes
 *     room); tick labels of two axes meeting in a corner: the y labels moved left;
 *   - labels of points past the plotting area (plotly clips them there) or the figure,
 *     or on top of each other: drawn on the point's other side. */
function quad(t) {
  const s = getComputedStyle(t);
  if (!t.textContent.trim() || s.visibility === "hidden" || s.display === "none" ||
      parseFloat(s.fontSize) <= 2 || Number(s.fillOpacity) === 0 || /,\s*0\)$/.test(s.fill)) return null;
  const b = t.getBBox(), m = t.getScreenCTM();
  if (!m || !b.width || !b.height) return null;
  return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
    .map((p) => { return [m.a * p[0] + m.c * p[1] + m.e, m.b * p[0] + m.d * p[1] + m.f]; });
}

function texts(root, selector) {
  return Array.prototype.map.call(root.querySelectorAll(selector), (el) => {
    return {el: el, q: quad(el)};
  }).filter((t) => { return t.q; });
}

function bounds(q) {
  const xs = q.map((p) => { return p[0]; }), ys = q.map((p) => { return p[1]; });
  return {left: Math.min.apply(null, xs), right: Math.max.apply(null, xs),
          top: Math.min.apply(null, ys), bottom: Math.max.apply(null, ys)};
}

/* How deep two convex quadrilaterals overlap, in px (0: apart): separating axes. */
export function depth(p, q) {
  let least = Infinity;
  [p, q].forEach((poly) => {
    for (let i = 0; i < 4; i++) {
      const a = poly[i], b = poly[(i + 1) % 4], nx = b[1] - a[1], ny = a[0] - b[0];
      const len = Math.sqrt(nx * nx + ny * ny);
      if (!len) continue;
      const on = function (pts) { return pts.map((c) => { return (nx * c[0] + ny * c[1]) / len; }); };
      const s = on(p), t = on(q);
      least = Math.min(least, Math.min(Math.max.apply(null, s), Math.max.apply(null, t)) -
                              Math.max(Math.min.apply(null, s), Math.min.apply(null, t)));
    }
  });
  return Math.max(0, least);
}

const TOUCH = 0.5;                                  // px of overlap that count

function collide(list) {
  for (let i = 0; i < list.length; i++) {
    for (let j = i + 1; j < list.length; j++) {
      if (depth(list[i].q, list[j].q) > TOUCH) return [list[i], list[j]];
    }
  }
  return null;
}

export function nice(x) {                                // 1, 2 or 5 times a power of ten, >= x
  const p = Math.pow(10, Math.floor(Math.log10(x))), f = x / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

/* Ticks of a log axis at 1-9, 1-2-5, 1-3 or 1 times the powers of ten: the finest of
 * these with at least 3 ticks that keeps `gap` px between neighbours; within less than
 * that, evenly spaced numbers (0.4, 0.5, 0.6), as many as keep the gap. */
export function logTicks(ax, gap) {
  const r = (ax.range || []).map(Number);
  if (r.length !== 2 || !isFinite(r[0]) || !isFinite(r[1]) || r[0] === r[1]) return null;
  const r0 = Math.min(r[0], r[1]), r1 = Math.max(r[0], r[1]);
  const lo = Math.pow(10, r0), hi = Math.pow(10, r1);
  const tight = function (vals) {
    for (let i = 1; i < vals.length; i++) {
      if ((Math.log10(vals[i] / vals[i - 1])) / (r1 - r0) * ax._length < gap) return true;
    }
    return false;
  };
  const ladders = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 5], [1, 3], [1]];
  for (let i = 0; i < ladders.length; i++) {
    const vals = [];
    for (let k = Math.floor(r0); k <= Math.ceil(r1); k++) {
      ladders[i].forEach((m) => {
        const v = Number((m * Math.pow(10, k)).toPrecision(6));
        if (v >= lo * 0.9999 && v <= hi * 1.0001) vals.push(v);
      });
    }
    if (vals.length < 3) break;               // coarser ladders have fewer still
    if (!tight(vals)) return vals;
  }
  for (let step = nice((hi - lo) / 40); step < hi - lo; step = nice(step * 1.5)) {
    const even = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi * 1.0001; v += step) even.push(Number(v.toPrecision(6)));
    if (even.length < 2) break;
    if (!tight(even)) return even;
  }
  return null;
}

export function numberText(v) {                    // 0.5, 20, 5000, 2×10^19
  if (v !== 0 && (Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3)) {
    const k = Math.floor(Math.log10(Math.abs(v))), m = Number((v / Math.pow(10, k)).toPrecision(3));
    return (m === 1 ? "" : m + "×") + "10<sup>" + k + "</sup>";
  }
  return String(Number(v.toPrecision(6)));
}

function axisFixes(gd, fix) {
  const axes = tickLabelFixes(gd, fix);
  titleFixes(gd, fix, axes);
  cornerFixes(fix, axes);
}

function tickLabelFixes(gd, fix) {    // each axis's tick labels; returns the axes and labels
  const fl = gd._fullLayout, axes = [];
  ["x", "y"].forEach((letter) => {
    (fl._subplots[letter + "axis"] || []).forEach((id) => {
      const name = letter + "axis" + id.slice(1), ax = fl[name];
      if (!ax || ax.visible === false || !ax._length) return;
      const user = gd.layout[name] || {}, font = (ax.tickfont || {}).size || 12;
      const labels = texts(gd, "g." + id + "tick > text");
      axes.push({letter: letter, name: name, ax: ax, labels: labels});
      const ours = (gd._bookFigure || {}).logGap || {};
      if (ax.type === "log" && (/^D/.test(String(ax.dtick)) && user.tickvals === undefined ||
                                (ours[name] && collide(labels)))) {
        // plotly labels the ticks between powers of ten with a digit (0.5 as "5"): the
        // numbers written out, as many as keep apart (fewer each time they collide)
        ours[name] = ours[name] ? ours[name] * 1.5 : 1;
        if (gd._bookFigure) gd._bookFigure.logGap = ours;
        const chars = Math.max.apply(null, labels.map((l) => { return l.el.textContent.length; }).concat([3]));
        const ticks = logTicks(ax, ours[name] * (letter === "y" ? 1.6 * font : 0.6 * font * chars + 8));
        if (ticks) {
          fix.layout[name + ".tickmode"] = "array";
          fix.layout[name + ".tickvals"] = ticks;
          fix.layout[name + ".ticktext"] = ticks.map(numberText);
          return;
        }
      }
      const colliding = collide(labels), names = (ax._categories || []).length;
      const upright = (gd._bookFigure || {}).upright || {};
      if (ax.type === "category" && names && !upright[name] && user.dtick === undefined &&
          (colliding || Number(ax.dtick) > 1)) {
        // names on top of each other, or every other one left out (plotly's choice):
        // every name, smaller and (on an x axis) upright, where 8 px letters fit
        const size = Math.min(font, Math.floor(ax._length / names / 1.35));
        if (size >= 8) {
          upright[name] = true;
          if (gd._bookFigure) gd._bookFigure.upright = upright;
          fix.layout[name + ".tickmode"] = "linear";
          fix.layout[name + ".tick0"] = 0;
          fix.layout[name + ".dtick"] = 1;
          fix.layout[name + ".tickfont.size"] = size;
          if (letter === "x") fix.layout[name + ".tickangle"] = -90;
          return;
        }
      }
      if (colliding) {
        if (upright[name] && font > 8) {               // every name: smaller still
          fix.layout[name + ".tickfont.size"] = font - 1;
        } else if (ax.type === "log") {
          const dtick = ax.dtick;
          fix.layout[name + ".dtick"] = dtick === "D1" ? "D2" : dtick === "D2" ? 1 : Number(dtick) + 1;
        } else if (ax.type === "category" || ax.type === "multicategory") {
          fix.layout[name + ".tickmode"] = "linear";
          fix.layout[name + ".tick0"] = 0;
          fix.layout[name + ".dtick"] = Math.max(1, Math.round(Number(ax.dtick) || 1)) * 2;
        } else {
          fix.layout[name + ".nticks"] = Math.max(2, Math.floor(labels.length / 2));
        }
      }
    });
  });
  return axes;
}

function titleFixes(gd, fix, axes) {
  axes.forEach((a) => {       // its title on its labels: the title moved away
    const title = texts(gd, ".g-" + a.ax._id + "title text");
    if (!title.length) return;
    let hit = 0;
    a.labels.forEach((l) => {
      if (depth(l.q, title[0].q) <= TOUCH) return;
      const lb = bounds(l.q), tb = bounds(title[0].q);
      hit = Math.max(hit, a.letter === "y" ? tb.right - lb.left : lb.bottom - tb.top);
    });
    if (hit > 0) {
      const standoff = ((gd.layout[a.name] || {}).title || {}).standoff;
      fix.layout[a.name + ".title.standoff"] = (typeof standoff === "number" ? standoff : 4) + Math.ceil(hit) + 3;
      fix.layout[a.name + ".automargin"] = true;
    }
  });
}

function cornerFixes(fix, axes) {
  axes.forEach((y) => {       // x and y labels meeting in a corner: the y labels left
    if (y.letter !== "y") return;
    let hit = 0;
    axes.forEach((x) => {
      if (x.letter !== "x") return;
      x.labels.forEach((xl) => {
        y.labels.forEach((yl) => {
          if (depth(xl.q, yl.q) > TOUCH) hit = Math.max(hit, bounds(yl.q).right - bounds(xl.q).left);
        });
      });
    });
    if (hit > 0) {
      fix.layout[y.name + ".ticklabelstandoff"] = (y.ax.ticklabelstandoff || 0) + Math.ceil(hit) + 2;
      fix.layout[y.name + ".automargin"] = true;
    }
  });
}

function colorbarFixes(gd, fix) {   // colour bar labels on top of each other, or short of its ends
  (gd._fullData || []).forEach((trace) => {
    const bar = trace.uid && gd.querySelector(".cb" + trace.uid);
    if (!bar) return;
    const labels = texts(bar, ".cbaxis text, [class$=tick] > text");
    if (collide(labels)) {
      fix.restyle.push([{"colorbar.nticks": Math.max(2, Math.floor(labels.length / 2))},
                        [trace.index]]);
      return;
    }
    const ends = barEnds(trace.zmin, trace.zmax, labels.map((l) => {
      return Number(l.el.textContent.replace("\u2212", "-"));
    }));
    if (ends) {
      fix.restyle.push([{"colorbar.tickmode": "array", "colorbar.tickvals": [ends],
                         "colorbar.ticktext": [ends.map(numberText)]}, [trace.index]]);
    }
  });
}

/* Labels for a colour bar whose labels stop short of an end of its range lo..hi (plotly
   labels a constant map's range, the value +- 0.5, at 0 and 0.5 only): both ends rounded
   inwards and the middle, to a tenth of the range's order of magnitude; null when the
   labels reach within a quarter of the range of both ends, or are not plain numbers
   (powers of ten: left as plotly drew them, and as this draws its own). */
export function barEnds(lo, hi, values) {
  if (typeof lo !== "number" || typeof hi !== "number" || !(hi > lo)) return null;
  const span = hi - lo, shown = values.filter((v) => { return Number.isFinite(v); });
  if (values.length && !shown.length) return null;
  if (shown.length && Math.min.apply(null, shown) <= lo + span / 4 &&
      Math.max.apply(null, shown) >= hi - span / 4) return null;
  const step = Math.pow(10, Math.floor(Math.log10(span))) / 10;   // span: 10 to 100 steps
  const at = (k) => { return Number((k * step).toPrecision(12)); };
  return [at(Math.ceil(lo / step)), at(Math.round((lo + hi) / 2 / step)), at(Math.floor(hi / step))];
}

function pointLabelFixes(gd, fix) {
  const fl = gd._fullLayout, svg = gd.querySelector("svg.main-svg"), all = [];
  if (!svg) return;
  const page = svg.getBoundingClientRect();
  gd.querySelectorAll(".scatterlayer .trace").forEach((node) => {
    const cd = node.__data__, trace = cd && cd[0] && cd[0].trace;
    if (!trace || !/text/.test(trace.mode || "")) return;
    const xa = fl["xaxis" + (trace.xaxis || "x").slice(1)], ya = fl["yaxis" + (trace.yaxis || "y").slice(1)];
    const box = trace.cliponaxis === false || !xa || !ya
      ? {left: page.left, right: page.right, top: page.top, bottom: page.bottom}
      : {left: page.left + xa._offset, right: page.left + xa._offset + xa._length,
         top: page.top + ya._offset, bottom: page.top + ya._offset + ya._length};
    texts(node, ".textpoint text").forEach((t) => {
      const point = t.el.parentNode.__data__;
      all.push({el: t.el, q: t.q, trace: trace, i: point && typeof point.i === "number" ? point.i : -1,
                box: box});
    });
  });
  const moves = {};                                  // trace index -> positions
  function move(label, vertical, horizontal) {
    const trace = label.trace, key = trace.index;
    if (label.i < 0) return;
    if (!moves[key]) {
      const base = (gd.data[key] || {}).textposition || trace.textposition || "middle center";
      moves[key] = Array.isArray(base) ? base.slice()
        : (trace.x || trace.y || []).map(() => { return base; });
    }
    const parts = String(moves[key][label.i] || "middle center").split(" ");
    moves[key][label.i] = (vertical || parts[0]) + " " + (horizontal || parts[1] || "center");
  }
  all.forEach((l) => {
    const b = bounds(l.q), parts = String(l.trace.textposition && Array.isArray(l.trace.textposition)
      ? l.trace.textposition[l.i] : l.trace.textposition || "middle center").split(" ");
    if (b.right > l.box.right + 1) move(l, null, "left");
    else if (b.left < l.box.left - 1) move(l, null, "right");
    if (b.top < l.box.top - 1 && parts[0] === "top") move(l, "bottom");
    else if (b.bottom > l.box.bottom + 1 && parts[0] === "bottom") move(l, "top");
  });
  if (!Object.keys(moves).length) {
    const pair = collide(all);                       // two labels on top of each other
    if (pair) {
      const second = pair[1], position = String(Array.isArray(second.trace.textposition)
        ? second.trace.textposition[second.i] : second.trace.textposition || "top center");
      move(second, /^bottom/.test(position) ? "top" : "bottom");
    }
  }
  Object.keys(moves).forEach((key) => {
    fix.restyle.push([{textposition: [moves[key]]}, [Number(key)]]);
  });
}

export function tidy(gd) {
  let passes = 0;
  const figure = gd._bookFigure || {};
  figure.tidying = true;
  function pass() {
    if (!gd._fullLayout || passes++ >= 6) return gd;
    const fix = {layout: {}, restyle: []};
    try {
      axisFixes(gd, fix);
      colorbarFixes(gd, fix);
      pointLabelFixes(gd, fix);
    } catch (e) {                                  // a figure is never lost to a tidy-up
      console.warn("figures/tidy.js: " + e);
      return gd;
    }
    const steps = fix.restyle.map((r) => {
      return function () { return Plotly.restyle(gd, r[0], r[1]); };
    });
    if (Object.keys(fix.layout).length) {
      steps.unshift(() => { return Plotly.relayout(gd, fix.layout); });
    }
    if (!steps.length) return gd;
    return steps.reduce((done, step) => { return done.then(step); }, Promise.resolve())
      .then(pass);
  }
  const end = function () { figure.tidying = false; return gd; };
  return Promise.resolve().then(pass).then(end, end);
}
