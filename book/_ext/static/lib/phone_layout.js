/* A figure's layout fitted to a narrow screen (a phone): what the book's figures
 * (figures/redraw.js) and the translator's map draw below the phone breakpoint (phone.js).
 *   - margins shrink to what the axis labels need (automargin);
 *   - a legend goes below the plot, horizontal, so that it takes no width;
 *   - panels side by side (subplots in columns) are stacked, each the full width;
 *   - a colour bar goes below the plot, horizontal;
 *   - titles are broken into lines; menus and sliders are kept inside the figure's width.
 * Pure functions of plotly's data and layout (tests/js/layout.test.js). */
const num = function (v, d) { return typeof v === "number" ? v : d; };

/* The layout's axes of one letter, by their keys ("xaxis", "xaxis2", ...): those the layout
 * names and those the traces refer to. */
export function layoutAxes(layout, letter, data) {
  const names = {};
  Object.keys(layout).forEach((k) => {
    if (new RegExp("^" + letter + "axis\\d*$").test(k)) names[k] = true;
  });
  (data || []).forEach((t) => {
    const ref = t[letter + "axis"] || letter;
    names[letter + "axis" + ref.slice(1)] = true;
  });
  return Object.keys(names);
}

/* Stack panels that sit side by side: each x axis spans the width, and the panels'
 * y domains are laid out top to bottom in reading order (row, then column). */
export function stackPanels(data, layout) {
  const xs = layoutAxes(layout, "x", data);
  const panels = [];
  xs.forEach((xname) => {
    const xa = layout[xname] || {};
    if (xa.overlaying || xa.visible === false) return;
    const yname = "yaxis" + (xa.anchor && xa.anchor !== "free" ? xa.anchor.slice(1) : xname.slice(5));
    const ya = layout[yname] || {};
    const xd = xa.domain || [0, 1], yd = ya.domain || [0, 1];
    panels.push({x: xname, y: yname, xd: xd, yd: yd});
  });
  const columns = {};
  panels.forEach((p) => { columns[p.xd[0].toFixed(3)] = true; });
  if (Object.keys(columns).length < 2) return 1;
  panels.sort((a, b) => { return (b.yd[1] - a.yd[1]) || (a.xd[0] - b.xd[0]); });
  const n = panels.length, gap = 0.14 / n * 2, old = panels.map((p) => {
    return {xc: (p.xd[0] + p.xd[1]) / 2, top: p.yd[1]};
  });
  panels.forEach((p, i) => {
    const top = 1 - i / n, bottom = 1 - (i + 1) / n + (i < n - 1 ? gap : 0);
    layout[p.x] = Object.assign({}, layout[p.x], {domain: [0, 1]});
    layout[p.y] = Object.assign({}, layout[p.y], {domain: [bottom, top - (i ? gap / 3 : 0)]});
    p.top = top - (i ? gap / 3 : 0);
  });
  (layout.annotations || []).forEach((a) => {     // subplot titles follow their panel
    if (a.xref !== "paper" || a.yref !== "paper") return;
    old.forEach((o, i) => {
      if (Math.abs(a.x - o.xc) < 0.02 && Math.abs(a.y - o.top) < 0.05) {
        a.x = 0.5; a.y = panels[i].top;
      }
    });
  });
  return n;
}

/* A title wider than the screen is broken into lines at spaces (plotly does not wrap). */
export function wrap(text, chars) {
  if (typeof text !== "string" || text.length <= chars || text.indexOf("<br") >= 0) return text;
  const lines = [""];
  text.split(" ").forEach((word) => {
    const last = lines[lines.length - 1];
    if (last && (last + " " + word).length > chars) lines.push(word);
    else lines[lines.length - 1] = last ? last + " " + word : word;
  });
  return lines.join("<br>");
}

function wrapTitles(layout, width) {       // the title, and the titles controls set
  const title = typeof layout.title === "string" ? {text: layout.title} : layout.title;
  if (!title || !title.text) return 0;
  const chars = Math.floor((width - 24) / (num((title.font || {}).size, 17) * 0.55));
  let lines = 1;
  const count = function (t) {
    lines = Math.max(lines, (t.match(/<br>/g) || []).length + 1); return t;
  };
  layout.title = Object.assign({}, title, {text: count(wrap(title.text, chars))});
  // a subtitle (smaller: more characters a line) is wrapped too; its lines add to the title's
  const subtitle = title.subtitle;
  let subLines = 1;
  const subChars = Math.floor((width - 24) / (num(((subtitle || {}).font || {}).size, 13) * 0.55));
  const countSub = function (t) {
    subLines = Math.max(subLines, (t.match(/<br>/g) || []).length + 1); return t;
  };
  if (subtitle && typeof subtitle.text === "string") {
    layout.title.subtitle = Object.assign({}, subtitle, {text: countSub(wrap(subtitle.text, subChars))});
  }
  const controls = (layout.sliders || []).map((c) => { return c.steps || []; })
    .concat((layout.updatemenus || []).map((m) => { return m.buttons || []; }));
  controls.forEach((steps) => {
    steps.forEach((step) => {
      (step.args || []).forEach((arg) => {
        if (arg && typeof arg["title.text"] === "string") {
          arg["title.text"] = count(wrap(arg["title.text"], chars));
        }
        if (arg && typeof arg["title.subtitle.text"] === "string") {
          arg["title.subtitle.text"] = countSub(wrap(arg["title.subtitle.text"], subChars));
        }
      });
    });
  });
  return lines - 1 + (subLines - 1) * 0.8;
}

/* An x axis title wider than the plot is broken into lines; returns the lines added. */
function wrapAxisTitles(layout, data, width) {
  let added = 0;
  layoutAxes(layout, "x", data).forEach((name) => {
    const axis = layout[name] || {};
    const title = typeof axis.title === "string" ? {text: axis.title} : axis.title;
    if (!title || typeof title.text !== "string") return;
    const chars = Math.floor((width - 24) / (num((title.font || {}).size, 14) * 0.55));
    const text = wrap(title.text, chars);
    added = Math.max(added, (text.match(/<br>/g) || []).length);
    layout[name] = Object.assign({}, axis, {title: Object.assign({}, title, {text: text})});
  });
  return added;
}

/* Every axis label-sized (automargin; a map's token labels and titles small). */
function phoneAxes(layout, data, map) {
  ["x", "y"].forEach((letter) => {
    layoutAxes(layout, letter, data).forEach((name) => {
      layout[name] = Object.assign({automargin: true}, layout[name]);
      if (map) {            // a map's token labels: small, so that the map keeps the width
        const font = layout[name].tickfont || {};
        layout[name].tickfont = Object.assign({}, font, {size: Math.min(num(font.size, 12), 9)});
        const title = typeof layout[name].title === "string" ? {text: layout[name].title}
                                                            : layout[name].title;
        if (title) {
          layout[name].title = Object.assign({}, title, {standoff: 4, font:
            Object.assign({}, title.font, {size: Math.min(num((title.font || {}).size, 14), 12)})});
        }
      }
    });
  });
}

/* A legend of more than one entry: in rows below the plot; returns the px it adds. */
function phoneLegend(layout, data, width) {
  const shown = data.filter((t) => { return t.showlegend !== false && t.name; });
  if (layout.showlegend !== false && (shown.length > 1 || layout.showlegend === true)) {
    layout.legend = Object.assign({}, layout.legend, {orientation: "h", x: 0, xanchor: "left",
      xref: "container", y: 0, yanchor: "bottom", yref: "container"});
    const perRow = Math.max(1, Math.floor(width / 150));
    return 24 * Math.ceil(shown.length / perRow) + 8;
  }
  return 0;
}

/* Each map's colour bar at the figure's foot; returns whether there is one. */
function phoneColorbars(data, width) {
  let drawn = false;
  data.forEach((t) => {
    if (!/heatmap|contour|histogram2d/.test(t.type || "") || t.showscale === false) return;
    const cb = t.colorbar || {};
    const title = typeof cb.title === "string" ? {text: cb.title} : Object.assign({}, cb.title);
    // the bar at the figure's foot, its title beside it (plotly 4.1 draws a "top" title of
    // a horizontal bar over the bar). Its length holds the title and the bar; each tick
    // label starts at its tick ("outside right"), so the first one stays clear of the
    // title, and the room left at the right holds the last one (a bar as long as the
    // screen drew its last label off it, hidden, and its first under the title).
    t.colorbar = Object.assign({}, cb, {orientation: "h", x: 0.02, xanchor: "left",
      xref: "container", len: Math.round(width - 80), lenmode: "pixels", thickness: 10, y: 0.01,
      ticklabelposition: "outside right",
      yanchor: "bottom", yref: "container", title: Object.assign(title, {side: "right"})});
    drawn = true;
  });
  return drawn;
}

/* Each slider as wide as the screen, its end labels on it. */
function phoneSliders(layout, width) {
  (layout.sliders || []).forEach((s) => {    // the end labels stay on screen
    const steps = s.steps || [], chars = function (step) {
      return String((step || {}).label || "").length;
    };
    const widest = Math.max.apply(null, steps.map(chars).concat([1]));
    s.x = 0; s.len = 1; s.xanchor = "left";
    if (steps.length * widest * 6.5 > width) {
      // Too many labels to read side by side: the current value above the slider names
      // the step; the tick labels are hidden (font size 1, transparent).
      s.currentvalue = Object.assign({}, s.currentvalue,
        {font: Object.assign({size: 13, color: "#444"}, (s.currentvalue || {}).font)});
      s.font = {size: 1, color: "rgba(0,0,0,0)"};
      s.pad = Object.assign({}, s.pad, {l: 8, r: 8, t: num((s.pad || {}).t, 20)});
    } else {
      const half = function (step) { return Math.min(width * 0.3, Math.max(4, chars(step) * 3.5)); };
      s.pad = Object.assign({}, s.pad, {l: half(steps[0]), r: half(steps[steps.length - 1]),
                                        t: num((s.pad || {}).t, 20)});
    }
  });
}

export function phoneLayout(data, layout, width) {
  layout = JSON.parse(JSON.stringify(layout || {}));
  const margin = layout.margin || {};
  const map = data.some((t) => { return /heatmap|contour|histogram2d/.test(t.type || ""); });
  // margins as thin as the labels allow (automargin widens them where labels need it)
  layout.margin = Object.assign({}, margin, {l: Math.min(num(margin.l, 80), map ? 0 : 4),
                                             r: Math.min(num(margin.r, 80), map ? 2 : 8)});
  phoneAxes(layout, data, map);
  const panels = stackPanels(data, layout);
  let height = num(layout.height, 450);
  if (panels > 1) height = Math.round(height * (0.35 + 0.65 * panels));
  let bottom = phoneLegend(layout, data, width);         // px added below the plot
  if (phoneColorbars(data, width)) bottom = Math.max(bottom, 64);
  phoneSliders(layout, width);
  let top = Math.round(22 * wrapTitles(layout, width));  // px added above the plot
  bottom += 18 * wrapAxisTitles(layout, data, width);
  (layout.updatemenus || []).forEach((m) => {
    if (typeof m.x === "number" && m.x > 0.6) { m.x = 1; m.xanchor = "right"; }
    if (typeof m.x === "number" && m.x < 0) { m.x = 0; m.xanchor = "left"; }
    // A menu above the plot would cover the title's second line: room for both.
    if (num(m.y, 1) >= 1 && m.yanchor === "bottom") top += 40;
  });
  if (top) {
    layout.margin.t = num(margin.t, 100) + top;
    height += top;
  }
  if (bottom) {
    layout.margin.b = num(margin.b, 80) + bottom;
    height += bottom;
  }
  layout.height = height;
  return layout;
}
