/* The book's figures through their life: each figure's inline script calls newPlot
 * (attentionBook.newPlot, figures.js), which on a box narrower than the phone breakpoint
 * draws the phone's layout (lib/phone_layout.js), keeps the figure's data and layout, and
 * draws it anew when its box crosses the breakpoint (a phone turned, a window resized),
 * keeping the reader's slider steps and menu options. After every draw the texts are
 * tidied (tidy.js). */
import {PHONE_PX} from "../lib/phone.js";
import {followWidth} from "../lib/resize.js";
import {phoneLayout} from "../lib/phone_layout.js";
import {tidy} from "./tidy.js";

/* ------------------------------------------------ across the phone layout's switch
 * A figure keeps the data and layout it was given (a copy that plotly's restyle and
 * relayout cannot reach): when its container's width crosses PHONE_PX (a phone turned,
 * a window narrowed), it is drawn anew from them in the other layout, with the reader's
 * choices (slider steps, menu options, traces hidden from the legend) applied again.
 * Drawing anew rather than plotly.react: react from one layout to the other kept margins
 * pushed for the other layout's colour bar (see translator/widget.js). */

/* Objects and arrays of objects are copied; arrays of numbers or strings (the data) are
 * shared: plotly replaces them, never changes them. */
function copy(v) {
  if (Array.isArray(v)) {
    return v.some((x) => { return x && typeof x === "object" && !Array.isArray(x); })
      ? v.map(copy) : v;
  }
  if (!v || typeof v !== "object") return v;
  const out = {};
  Object.keys(v).forEach((k) => { out[k] = copy(v[k]); });
  return out;
}

function setPath(obj, path, value) {            // "xaxis.title.text", "sliders[0].active"
  const parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
  for (let i = 0; i < parts.length - 1; i++) {
    if (!obj[parts[i]] || typeof obj[parts[i]] !== "object") obj[parts[i]] = {};
    obj = obj[parts[i]];
  }
  obj[parts[parts.length - 1]] = value;
}

/* What plotly does for a slider step or a menu button ("update", "restyle" or
 * "relayout"), done to a figure's data and layout before they are drawn. */
function applyStep(step, data, layout) {
  const args = step.args || [], method = step.method;
  const restyle = method === "restyle" || method === "update" ? args[0] : null;
  const traces = method === "restyle" ? args[1] : method === "update" ? args[2] : null;
  const relayout = method === "relayout" ? args[0] : method === "update" ? args[1] : null;
  if (restyle) {
    const which = traces === undefined || traces === null
      ? data.map((_, i) => { return i; }) : [].concat(traces);
    Object.keys(restyle).forEach((key) => {
      const value = restyle[key];
      which.forEach((t, j) => {      // an array: one value a trace, as plotly's restyle
        if (data[t]) setPath(data[t], key, Array.isArray(value) ? value[j % value.length] : value);
      });
    });
  }
  Object.keys(relayout || {}).forEach((key) => { setPath(layout, key, relayout[key]); });
}

/* The reader's choices on the figure drawn now, applied to a fresh copy of its data and
 * layout: each menu's and slider's active entry (where it is not the first one drawn)
 * and the traces hidden by a click on the legend. */
function replayChoices(gd, data, layout) {
  const now = gd.layout || {};
  [["updatemenus", "buttons"], ["sliders", "steps"]].forEach((kind) => {
    (layout[kind[0]] || []).forEach((control, i) => {
      const active = ((now[kind[0]] || [])[i] || {}).active;
      const first = typeof control.active === "number" ? control.active : 0;
      if (typeof active !== "number" || active === first) return;
      const step = (control[kind[1]] || [])[active];
      if (step) applyStep(step, data, layout);
      control.active = active;
    });
  });
  (gd.data || []).forEach((trace, i) => {
    if (trace.visible === "legendonly" && data[i]) data[i].visible = "legendonly";
  });
}

function boxWidth(gd) {
  const box = gd.parentElement && gd.parentElement.getBoundingClientRect();
  return (box && box.width) || innerWidth;
}

function draw(gd, data, layout) {
  const figure = gd._bookFigure, width = boxWidth(gd), narrow = width < PHONE_PX;
  figure.narrow = narrow;
  figure.logGap = {};                      // what tidy changed on the last layout's axes
  figure.upright = {};
  if (narrow) layout = phoneLayout(data, layout, width);
  // plotly.io.to_html sized the figure's wrapper for the desktop layout's height
  if (gd.parentElement && figure.height) {
    gd.parentElement.style.height = narrow ? layout.height + "px" : figure.height;
  }
  return Plotly.newPlot(gd, data, layout, figure.config).then(() => {
    // a slider step, a menu option or plotly's resize draws new labels: measured again
    gd.on("plotly_afterplot", () => {
      if (figure.tidying) return;
      clearTimeout(figure.tidyTimer);
      figure.tidyTimer = setTimeout(() => {
        queue(gd, () => { return gd._fullLayout ? tidy(gd) : gd; });
      }, 50);
    });
    return tidy(gd);
  });
}

function queue(gd, job) {                  // one draw of a figure at a time
  const figure = gd._bookFigure;
  figure.drawing = (figure.drawing || Promise.resolve()).then(job, job);
  return figure.drawing;
}

// A figure follows its box. Across PHONE_PX it is drawn anew in the other layout. Within
// one layout plotly's responsive resize is not enough: it hears only the window's resize
// event, and the page's own layout (a sidebar shown or hidden, a scroll bar, fonts) can
// change a box's width after it or without one. The phone's layout is made for one width
// (titles broken into lines, legends placed): drawn anew; the desktop's: resized.
function follow(gd) {
  const figure = gd._bookFigure;
  if (figure.pending) return;
  figure.pending = true;
  queue(gd, () => {
    figure.pending = false;
    const width = gd.parentElement && gd.parentElement.getBoundingClientRect().width;
    if (!width) return gd;                                               // hidden
    if ((width < PHONE_PX) === figure.narrow) {                          // the same layout
      if (gd._fullLayout && Math.abs(gd._fullLayout.width - width) < 1) return gd;
      if (!figure.narrow) return Plotly.Plots.resize(gd);
    }
    const data = copy(figure.data), layout = copy(figure.layout);
    replayChoices(gd, data, layout);
    Plotly.purge(gd);
    return draw(gd, data, layout);
  });
}


export function newPlot(id, data, layout, config) {
  const gd = typeof id === "string" ? document.getElementById(id) : id;
  if (!gd) return Plotly.newPlot(id, data, layout, config);
  layout = layout || {};
  gd._bookFigure = {data: copy(data), layout: copy(layout), config: config,
                    height: gd.parentElement ? gd.parentElement.style.height : ""};
  const drawn = queue(gd, () => { return draw(gd, data, layout); });
  if (gd.parentElement && !gd._bookFollowed) {           // once, however often drawn
    gd._bookFollowed = true;
    followWidth(gd.parentElement, () => { if (gd._bookFigure) follow(gd); });
  }
  return drawn;
}
