/* The book's figures on a narrow screen (a phone): every figure is drawn through
 * bookNewPlot (transformer_book.viz.setup_plotly writes the call), which on a container
 * narrower than PHONE_PX adapts the figure's layout before plotly draws it:
 *   - margins shrink to what the axis labels need (automargin);
 *   - a legend goes below the plot, horizontal, so that it takes no width;
 *   - panels side by side (subplots in columns) are stacked, each the full width;
 *   - a colour bar goes below the plot, horizontal;
 *   - menus and sliders are kept inside the figure's width.
 * On a wider screen the layout is drawn as written. A figure whose container crosses
 * PHONE_PX later (a phone turned, a window resized) is drawn anew in the other layout, as
 * often as that happens, keeping the reader's slider steps and menu options. After every
 * draw, texts that plotly placed on top of each other or past the plotting area are
 * measured and moved apart (tidy, below). */
(function () {
  "use strict";
  var PHONE_PX = 600;
  var num = function (v, d) { return typeof v === "number" ? v : d; };

  function axisNames(layout, letter, data) {
    var names = {};
    Object.keys(layout).forEach(function (k) {
      if (new RegExp("^" + letter + "axis\\d*$").test(k)) names[k] = true;
    });
    (data || []).forEach(function (t) {
      var ref = t[letter + "axis"] || letter;
      names[letter + "axis" + ref.slice(1)] = true;
    });
    return Object.keys(names);
  }

  /* Stack panels that sit side by side: each x axis spans the width, and the panels'
   * y domains are laid out top to bottom in reading order (row, then column). */
  function stackPanels(data, layout) {
    var xs = axisNames(layout, "x", data);
    var panels = [];
    xs.forEach(function (xname) {
      var xa = layout[xname] || {};
      if (xa.overlaying || xa.visible === false) return;
      var yname = "yaxis" + (xa.anchor && xa.anchor !== "free" ? xa.anchor.slice(1) : xname.slice(5));
      var ya = layout[yname] || {};
      var xd = xa.domain || [0, 1], yd = ya.domain || [0, 1];
      panels.push({x: xname, y: yname, xd: xd, yd: yd});
    });
    var columns = {};
    panels.forEach(function (p) { columns[p.xd[0].toFixed(3)] = true; });
    if (Object.keys(columns).length < 2) return 1;
    panels.sort(function (a, b) { return (b.yd[1] - a.yd[1]) || (a.xd[0] - b.xd[0]); });
    var n = panels.length, gap = 0.14 / n * 2, old = panels.map(function (p) {
      return {xc: (p.xd[0] + p.xd[1]) / 2, top: p.yd[1]};
    });
    panels.forEach(function (p, i) {
      var top = 1 - i / n, bottom = 1 - (i + 1) / n + (i < n - 1 ? gap : 0);
      layout[p.x] = Object.assign({}, layout[p.x], {domain: [0, 1]});
      layout[p.y] = Object.assign({}, layout[p.y], {domain: [bottom, top - (i ? gap / 3 : 0)]});
      p.top = top - (i ? gap / 3 : 0);
    });
    (layout.annotations || []).forEach(function (a) {     // subplot titles follow their panel
      if (a.xref !== "paper" || a.yref !== "paper") return;
      old.forEach(function (o, i) {
        if (Math.abs(a.x - o.xc) < 0.02 && Math.abs(a.y - o.top) < 0.05) {
          a.x = 0.5; a.y = panels[i].top;
        }
      });
    });
    return n;
  }

  /* A title wider than the screen is broken into lines at spaces (plotly does not wrap). */
  function wrap(text, chars) {
    if (typeof text !== "string" || text.length <= chars || text.indexOf("<br") >= 0) return text;
    var lines = [""];
    text.split(" ").forEach(function (word) {
      var last = lines[lines.length - 1];
      if (last && (last + " " + word).length > chars) lines.push(word);
      else lines[lines.length - 1] = last ? last + " " + word : word;
    });
    return lines.join("<br>");
  }

  function wrapTitles(layout, width) {       // the title, and the titles controls set
    var title = typeof layout.title === "string" ? {text: layout.title} : layout.title;
    if (!title || !title.text) return 0;
    var chars = Math.floor((width - 24) / (num((title.font || {}).size, 17) * 0.55));
    var lines = 1, count = function (t) {
      lines = Math.max(lines, (t.match(/<br>/g) || []).length + 1); return t;
    };
    layout.title = Object.assign({}, title, {text: count(wrap(title.text, chars))});
    // a subtitle (smaller: more characters a line) is wrapped too; its lines add to the title's
    var subtitle = title.subtitle, subLines = 1;
    var subChars = Math.floor((width - 24) / (num(((subtitle || {}).font || {}).size, 13) * 0.55));
    var countSub = function (t) {
      subLines = Math.max(subLines, (t.match(/<br>/g) || []).length + 1); return t;
    };
    if (subtitle && typeof subtitle.text === "string") {
      layout.title.subtitle = Object.assign({}, subtitle, {text: countSub(wrap(subtitle.text, subChars))});
    }
    var controls = (layout.sliders || []).map(function (c) { return c.steps || []; })
      .concat((layout.updatemenus || []).map(function (m) { return m.buttons || []; }));
    controls.forEach(function (steps) {
      steps.forEach(function (step) {
        (step.args || []).forEach(function (arg) {
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
    var added = 0;
    axisNames(layout, "x", data).forEach(function (name) {
      var axis = layout[name] || {};
      var title = typeof axis.title === "string" ? {text: axis.title} : axis.title;
      if (!title || typeof title.text !== "string") return;
      var chars = Math.floor((width - 24) / (num((title.font || {}).size, 14) * 0.55));
      var text = wrap(title.text, chars);
      added = Math.max(added, (text.match(/<br>/g) || []).length);
      layout[name] = Object.assign({}, axis, {title: Object.assign({}, title, {text: text})});
    });
    return added;
  }

  function phoneLayout(data, layout, width) {
    layout = JSON.parse(JSON.stringify(layout || {}));
    var margin = layout.margin || {};
    var map = data.some(function (t) { return /heatmap|contour|histogram2d/.test(t.type || ""); });
    // margins as thin as the labels allow (automargin widens them where labels need it)
    layout.margin = Object.assign({}, margin, {l: Math.min(num(margin.l, 80), map ? 0 : 4),
                                               r: Math.min(num(margin.r, 80), map ? 2 : 8)});
    ["x", "y"].forEach(function (letter) {
      axisNames(layout, letter, data).forEach(function (name) {
        layout[name] = Object.assign({automargin: true}, layout[name]);
        if (map) {            // a map's token labels: small, so that the map keeps the width
          var font = layout[name].tickfont || {};
          layout[name].tickfont = Object.assign({}, font, {size: Math.min(num(font.size, 12), 9)});
          var title = typeof layout[name].title === "string" ? {text: layout[name].title}
                                                              : layout[name].title;
          if (title) {
            layout[name].title = Object.assign({}, title, {standoff: 4, font:
              Object.assign({}, title.font, {size: Math.min(num((title.font || {}).size, 14), 12)})});
          }
        }
      });
    });
    var panels = stackPanels(data, layout);
    var height = num(layout.height, 450);
    if (panels > 1) height = Math.round(height * (0.35 + 0.65 * panels));
    var bottom = 0;                                        // px added below the plot
    var shown = data.filter(function (t) { return t.showlegend !== false && t.name; });
    if (layout.showlegend !== false && (shown.length > 1 || layout.showlegend === true)) {
      layout.legend = Object.assign({}, layout.legend, {orientation: "h", x: 0, xanchor: "left",
        xref: "container", y: 0, yanchor: "bottom", yref: "container"});
      var perRow = Math.max(1, Math.floor(width / 150));
      bottom += 24 * Math.ceil(shown.length / perRow) + 8;
    }
    data.forEach(function (t) {
      if (!/heatmap|contour|histogram2d/.test(t.type || "") || t.showscale === false) return;
      var cb = t.colorbar || {};
      var title = typeof cb.title === "string" ? {text: cb.title} : Object.assign({}, cb.title);
      // the bar at the figure's foot, its title at its right (plotly 4.1 draws a "top"
      // title of a horizontal bar over the bar)
      t.colorbar = Object.assign({}, cb, {orientation: "h", x: 0.02, xanchor: "left",
        xref: "container", len: Math.round(width - 24), lenmode: "pixels", thickness: 10, y: 0.01,
        yanchor: "bottom", yref: "container", title: Object.assign(title, {side: "right"})});
      bottom = Math.max(bottom, 64);
    });
    (layout.sliders || []).forEach(function (s) {    // the end labels stay on screen
      var steps = s.steps || [], chars = function (step) {
        return String((step || {}).label || "").length;
      };
      var widest = Math.max.apply(null, steps.map(chars).concat([1]));
      s.x = 0; s.len = 1; s.xanchor = "left";
      if (steps.length * widest * 6.5 > width) {
        // Too many labels to read side by side: the current value above the slider names
        // the step; the tick labels are hidden (font size 1, transparent).
        s.currentvalue = Object.assign({}, s.currentvalue,
          {font: Object.assign({size: 13, color: "#444"}, (s.currentvalue || {}).font)});
        s.font = {size: 1, color: "rgba(0,0,0,0)"};
        s.pad = Object.assign({}, s.pad, {l: 8, r: 8, t: num((s.pad || {}).t, 20)});
      } else {
        var half = function (step) { return Math.min(width * 0.3, Math.max(4, chars(step) * 3.5)); };
        s.pad = Object.assign({}, s.pad, {l: half(steps[0]), r: half(steps[steps.length - 1]),
                                          t: num((s.pad || {}).t, 20)});
      }
    });
    var top = Math.round(22 * wrapTitles(layout, width));  // px added above the plot
    bottom += 18 * wrapAxisTitles(layout, data, width);
    (layout.updatemenus || []).forEach(function (m) {
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

  window.bookPhoneLayout = phoneLayout;

  /* ------------------------------------------------ across the phone layout's switch
   * A figure keeps the data and layout it was given (a copy that plotly's restyle and
   * relayout cannot reach): when its container's width crosses PHONE_PX (a phone turned,
   * a window narrowed), it is drawn anew from them in the other layout, with the reader's
   * choices (slider steps, menu options, traces hidden from the legend) applied again.
   * Drawing anew rather than plotly.react: react from one layout to the other kept margins
   * pushed for the other layout's colour bar (see translator.js). */

  /* Objects and arrays of objects are copied; arrays of numbers or strings (the data) are
   * shared: plotly replaces them, never changes them. */
  function copy(v) {
    if (Array.isArray(v)) {
      return v.some(function (x) { return x && typeof x === "object" && !Array.isArray(x); })
        ? v.map(copy) : v;
    }
    if (!v || typeof v !== "object") return v;
    var out = {};
    Object.keys(v).forEach(function (k) { out[k] = copy(v[k]); });
    return out;
  }

  function setPath(obj, path, value) {            // "xaxis.title.text", "sliders[0].active"
    var parts = path.replace(/\[(\d+)\]/g, ".$1").split(".");
    for (var i = 0; i < parts.length - 1; i++) {
      if (!obj[parts[i]] || typeof obj[parts[i]] !== "object") obj[parts[i]] = {};
      obj = obj[parts[i]];
    }
    obj[parts[parts.length - 1]] = value;
  }

  /* What plotly does for a slider step or a menu button ("update", "restyle" or
   * "relayout"), done to a figure's data and layout before they are drawn. */
  function applyStep(step, data, layout) {
    var args = step.args || [], method = step.method;
    var restyle = method === "restyle" || method === "update" ? args[0] : null;
    var traces = method === "restyle" ? args[1] : method === "update" ? args[2] : null;
    var relayout = method === "relayout" ? args[0] : method === "update" ? args[1] : null;
    if (restyle) {
      var which = traces === undefined || traces === null
        ? data.map(function (_, i) { return i; }) : [].concat(traces);
      Object.keys(restyle).forEach(function (key) {
        var value = restyle[key];
        which.forEach(function (t, j) {      // an array: one value a trace, as plotly's restyle
          if (data[t]) setPath(data[t], key, Array.isArray(value) ? value[j % value.length] : value);
        });
      });
    }
    Object.keys(relayout || {}).forEach(function (key) { setPath(layout, key, relayout[key]); });
  }

  /* The reader's choices on the figure drawn now, applied to a fresh copy of its data and
   * layout: each menu's and slider's active entry (where it is not the first one drawn)
   * and the traces hidden by a click on the legend. */
  function replayChoices(gd, data, layout) {
    var now = gd.layout || {};
    [["updatemenus", "buttons"], ["sliders", "steps"]].forEach(function (kind) {
      (layout[kind[0]] || []).forEach(function (control, i) {
        var active = ((now[kind[0]] || [])[i] || {}).active;
        var first = typeof control.active === "number" ? control.active : 0;
        if (typeof active !== "number" || active === first) return;
        var step = (control[kind[1]] || [])[active];
        if (step) applyStep(step, data, layout);
        control.active = active;
      });
    });
    (gd.data || []).forEach(function (trace, i) {
      if (trace.visible === "legendonly" && data[i]) data[i].visible = "legendonly";
    });
  }

  function boxWidth(gd) {
    var box = gd.parentElement && gd.parentElement.getBoundingClientRect();
    return (box && box.width) || window.innerWidth;
  }

  function draw(gd, data, layout) {
    var figure = gd._bookFigure, width = boxWidth(gd), narrow = width < PHONE_PX;
    figure.narrow = narrow;
    figure.logGap = {};                      // what tidy changed on the last layout's axes
    figure.upright = {};
    if (narrow) layout = phoneLayout(data, layout, width);
    // plotly.io.to_html sized the figure's wrapper for the desktop layout's height
    if (gd.parentElement && figure.height) {
      gd.parentElement.style.height = narrow ? layout.height + "px" : figure.height;
    }
    return window.Plotly.newPlot(gd, data, layout, figure.config).then(function () {
      // a slider step, a menu option or plotly's resize draws new labels: measured again
      gd.on("plotly_afterplot", function () {
        if (figure.tidying) return;
        clearTimeout(figure.tidyTimer);
        figure.tidyTimer = setTimeout(function () {
          queue(gd, function () { return gd._fullLayout ? tidy(gd) : gd; });
        }, 50);
      });
      return tidy(gd);
    });
  }

  function queue(gd, job) {                  // one draw of a figure at a time
    var figure = gd._bookFigure;
    figure.drawing = (figure.drawing || Promise.resolve()).then(job, job);
    return figure.drawing;
  }

  // A figure follows its box. Across PHONE_PX it is drawn anew in the other layout. Within
  // one layout plotly's responsive resize is not enough: it hears only the window's resize
  // event, and the page's own layout (a sidebar shown or hidden, a scroll bar, fonts) can
  // change a box's width after it or without one. The phone's layout is made for one width
  // (titles broken into lines, legends placed): drawn anew; the desktop's: resized.
  function follow(gd) {
    var figure = gd._bookFigure;
    if (figure.pending) return;
    figure.pending = true;
    queue(gd, function () {
      figure.pending = false;
      var width = gd.parentElement && gd.parentElement.getBoundingClientRect().width;
      if (!width) return gd;                                               // hidden
      if ((width < PHONE_PX) === figure.narrow) {                          // the same layout
        if (gd._fullLayout && Math.abs(gd._fullLayout.width - width) < 1) return gd;
        if (!figure.narrow) return window.Plotly.Plots.resize(gd);
      }
      var data = copy(figure.data), layout = copy(figure.layout);
      replayChoices(gd, data, layout);
      window.Plotly.purge(gd);
      return draw(gd, data, layout);
    });
  }

  var watcher = typeof ResizeObserver === "function" && new ResizeObserver(function (entries) {
    entries.forEach(function (entry) {
      var gd = entry.target._bookPlot;
      if (gd && gd._bookFigure && entry.contentRect.width) follow(gd);
    });
  });

  window.bookNewPlot = function (id, data, layout, config) {
    var gd = typeof id === "string" ? document.getElementById(id) : id;
    if (!gd) return window.Plotly.newPlot(id, data, layout, config);
    layout = layout || {};
    gd._bookFigure = {data: copy(data), layout: copy(layout), config: config,
                      height: gd.parentElement ? gd.parentElement.style.height : ""};
    var drawn = queue(gd, function () { return draw(gd, data, layout); });
    if (watcher && gd.parentElement) {
      gd.parentElement._bookPlot = gd;
      watcher.observe(gd.parentElement);
    }
    return drawn;
  };

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
    var s = getComputedStyle(t);
    if (!t.textContent.trim() || s.visibility === "hidden" || s.display === "none" ||
        parseFloat(s.fontSize) <= 2 || Number(s.fillOpacity) === 0 || /,\s*0\)$/.test(s.fill)) return null;
    var b = t.getBBox(), m = t.getScreenCTM();
    if (!m || !b.width || !b.height) return null;
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(function (p) { return [m.a * p[0] + m.c * p[1] + m.e, m.b * p[0] + m.d * p[1] + m.f]; });
  }

  function texts(root, selector) {
    return Array.prototype.map.call(root.querySelectorAll(selector), function (el) {
      return {el: el, q: quad(el)};
    }).filter(function (t) { return t.q; });
  }

  function bounds(q) {
    var xs = q.map(function (p) { return p[0]; }), ys = q.map(function (p) { return p[1]; });
    return {left: Math.min.apply(null, xs), right: Math.max.apply(null, xs),
            top: Math.min.apply(null, ys), bottom: Math.max.apply(null, ys)};
  }

  /* How deep two convex quadrilaterals overlap, in px (0: apart): separating axes. */
  function depth(p, q) {
    var least = Infinity;
    [p, q].forEach(function (poly) {
      for (var i = 0; i < 4; i++) {
        var a = poly[i], b = poly[(i + 1) % 4], nx = b[1] - a[1], ny = a[0] - b[0];
        var len = Math.sqrt(nx * nx + ny * ny);
        if (!len) continue;
        var on = function (pts) { return pts.map(function (c) { return (nx * c[0] + ny * c[1]) / len; }); };
        var s = on(p), t = on(q);
        least = Math.min(least, Math.min(Math.max.apply(null, s), Math.max.apply(null, t)) -
                                Math.max(Math.min.apply(null, s), Math.min.apply(null, t)));
      }
    });
    return Math.max(0, least);
  }

  var TOUCH = 0.5;                                  // px of overlap that count

  function collide(list) {
    for (var i = 0; i < list.length; i++) {
      for (var j = i + 1; j < list.length; j++) {
        if (depth(list[i].q, list[j].q) > TOUCH) return [list[i], list[j]];
      }
    }
    return null;
  }

  function nice(x) {                                // 1, 2 or 5 times a power of ten, >= x
    var p = Math.pow(10, Math.floor(Math.log10(x))), f = x / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  /* Ticks of a log axis at 1-9, 1-2-5, 1-3 or 1 times the powers of ten: the finest of
   * these with at least 3 ticks that keeps `gap` px between neighbours; within less than
   * that, evenly spaced numbers (0.4, 0.5, 0.6), as many as keep the gap. */
  function logTicks(ax, gap) {
    var r = (ax.range || []).map(Number);
    if (r.length !== 2 || !isFinite(r[0]) || !isFinite(r[1]) || r[0] === r[1]) return null;
    var r0 = Math.min(r[0], r[1]), r1 = Math.max(r[0], r[1]);
    var lo = Math.pow(10, r0), hi = Math.pow(10, r1);
    var tight = function (vals) {
      for (var i = 1; i < vals.length; i++) {
        if ((Math.log10(vals[i] / vals[i - 1])) / (r1 - r0) * ax._length < gap) return true;
      }
      return false;
    };
    var ladders = [[1, 2, 3, 4, 5, 6, 7, 8, 9], [1, 2, 5], [1, 3], [1]];
    for (var i = 0; i < ladders.length; i++) {
      var vals = [];
      for (var k = Math.floor(r0); k <= Math.ceil(r1); k++) {
        ladders[i].forEach(function (m) {
          var v = Number((m * Math.pow(10, k)).toPrecision(6));
          if (v >= lo * 0.9999 && v <= hi * 1.0001) vals.push(v);
        });
      }
      if (vals.length < 3) break;               // coarser ladders have fewer still
      if (!tight(vals)) return vals;
    }
    for (var step = nice((hi - lo) / 40); step < hi - lo; step = nice(step * 1.5)) {
      var even = [];
      for (var v = Math.ceil(lo / step) * step; v <= hi * 1.0001; v += step) even.push(Number(v.toPrecision(6)));
      if (even.length < 2) break;
      if (!tight(even)) return even;
    }
    return null;
  }

  function numberText(v) {                    // 0.5, 20, 5000, 2×10^19
    if (v !== 0 && (Math.abs(v) >= 1e5 || Math.abs(v) < 1e-3)) {
      var k = Math.floor(Math.log10(Math.abs(v))), m = Number((v / Math.pow(10, k)).toPrecision(3));
      return (m === 1 ? "" : m + "×") + "10<sup>" + k + "</sup>";
    }
    return String(Number(v.toPrecision(6)));
  }

  function axisFixes(gd, fix) {
    var fl = gd._fullLayout, axes = [];
    ["x", "y"].forEach(function (letter) {
      (fl._subplots[letter + "axis"] || []).forEach(function (id) {
        var name = letter + "axis" + id.slice(1), ax = fl[name];
        if (!ax || ax.visible === false || !ax._length) return;
        var user = gd.layout[name] || {}, font = (ax.tickfont || {}).size || 12;
        var labels = texts(gd, "g." + id + "tick > text");
        axes.push({letter: letter, name: name, ax: ax, labels: labels});
        var ours = (gd._bookFigure || {}).logGap || {};
        if (ax.type === "log" && (/^D/.test(String(ax.dtick)) && user.tickvals === undefined ||
                                  (ours[name] && collide(labels)))) {
          // plotly labels the ticks between powers of ten with a digit (0.5 as "5"): the
          // numbers written out, as many as keep apart (fewer each time they collide)
          ours[name] = ours[name] ? ours[name] * 1.5 : 1;
          if (gd._bookFigure) gd._bookFigure.logGap = ours;
          var chars = Math.max.apply(null, labels.map(function (l) { return l.el.textContent.length; }).concat([3]));
          var ticks = logTicks(ax, ours[name] * (letter === "y" ? 1.6 * font : 0.6 * font * chars + 8));
          if (ticks) {
            fix.layout[name + ".tickmode"] = "array";
            fix.layout[name + ".tickvals"] = ticks;
            fix.layout[name + ".ticktext"] = ticks.map(numberText);
            return;
          }
        }
        var colliding = collide(labels), names = (ax._categories || []).length;
        var upright = (gd._bookFigure || {}).upright || {};
        if (ax.type === "category" && names && !upright[name] && user.dtick === undefined &&
            (colliding || Number(ax.dtick) > 1)) {
          // names on top of each other, or every other one left out (plotly's choice):
          // every name, smaller and (on an x axis) upright, where 8 px letters fit
          var size = Math.min(font, Math.floor(ax._length / names / 1.35));
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
            var dtick = ax.dtick;
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
    axes.forEach(function (a) {       // its title on its labels: the title moved away
      var title = texts(gd, ".g-" + a.ax._id + "title text");
      if (!title.length) return;
      var hit = 0;
      a.labels.forEach(function (l) {
        if (depth(l.q, title[0].q) <= TOUCH) return;
        var lb = bounds(l.q), tb = bounds(title[0].q);
        hit = Math.max(hit, a.letter === "y" ? tb.right - lb.left : lb.bottom - tb.top);
      });
      if (hit > 0) {
        var standoff = ((gd.layout[a.name] || {}).title || {}).standoff;
        fix.layout[a.name + ".title.standoff"] = (typeof standoff === "number" ? standoff : 4) + Math.ceil(hit) + 3;
        fix.layout[a.name + ".automargin"] = true;
      }
    });
    axes.forEach(function (y) {       // x and y labels meeting in a corner: the y labels left
      if (y.letter !== "y") return;
      var hit = 0;
      axes.forEach(function (x) {
        if (x.letter !== "x") return;
        x.labels.forEach(function (xl) {
          y.labels.forEach(function (yl) {
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

  function colorbarFixes(gd, fix) {            // colour bar labels on top of each other
    (gd._fullData || []).forEach(function (trace) {
      var bar = trace.uid && gd.querySelector(".cb" + trace.uid);
      if (!bar) return;
      var labels = texts(bar, ".cbaxis text, [class$=tick] > text");
      if (collide(labels)) {
        fix.restyle.push([{"colorbar.nticks": Math.max(2, Math.floor(labels.length / 2))},
                          [trace.index]]);
      }
    });
  }

  function pointLabelFixes(gd, fix) {
    var fl = gd._fullLayout, svg = gd.querySelector("svg.main-svg"), all = [];
    if (!svg) return;
    var page = svg.getBoundingClientRect();
    gd.querySelectorAll(".scatterlayer .trace").forEach(function (node) {
      var cd = node.__data__, trace = cd && cd[0] && cd[0].trace;
      if (!trace || !/text/.test(trace.mode || "")) return;
      var xa = fl["xaxis" + (trace.xaxis || "x").slice(1)], ya = fl["yaxis" + (trace.yaxis || "y").slice(1)];
      var box = trace.cliponaxis === false || !xa || !ya
        ? {left: page.left, right: page.right, top: page.top, bottom: page.bottom}
        : {left: page.left + xa._offset, right: page.left + xa._offset + xa._length,
           top: page.top + ya._offset, bottom: page.top + ya._offset + ya._length};
      texts(node, ".textpoint text").forEach(function (t) {
        var point = t.el.parentNode.__data__;
        all.push({el: t.el, q: t.q, trace: trace, i: point && typeof point.i === "number" ? point.i : -1,
                  box: box});
      });
    });
    var moves = {};                                  // trace index -> positions
    function move(label, vertical, horizontal) {
      var trace = label.trace, key = trace.index;
      if (label.i < 0) return;
      if (!moves[key]) {
        var base = (gd.data[key] || {}).textposition || trace.textposition || "middle center";
        moves[key] = Array.isArray(base) ? base.slice()
          : (trace.x || trace.y || []).map(function () { return base; });
      }
      var parts = String(moves[key][label.i] || "middle center").split(" ");
      moves[key][label.i] = (vertical || parts[0]) + " " + (horizontal || parts[1] || "center");
    }
    all.forEach(function (l) {
      var b = bounds(l.q), parts = String(l.trace.textposition && Array.isArray(l.trace.textposition)
        ? l.trace.textposition[l.i] : l.trace.textposition || "middle center").split(" ");
      if (b.right > l.box.right + 1) move(l, null, "left");
      else if (b.left < l.box.left - 1) move(l, null, "right");
      if (b.top < l.box.top - 1 && parts[0] === "top") move(l, "bottom");
      else if (b.bottom > l.box.bottom + 1 && parts[0] === "bottom") move(l, "top");
    });
    if (!Object.keys(moves).length) {
      var pair = collide(all);                       // two labels on top of each other
      if (pair) {
        var second = pair[1], position = String(Array.isArray(second.trace.textposition)
          ? second.trace.textposition[second.i] : second.trace.textposition || "top center");
        move(second, /^bottom/.test(position) ? "top" : "bottom");
      }
    }
    Object.keys(moves).forEach(function (key) {
      fix.restyle.push([{textposition: [moves[key]]}, [Number(key)]]);
    });
  }

  function tidy(gd) {
    var passes = 0, figure = gd._bookFigure || {};
    figure.tidying = true;
    function pass() {
      if (!gd._fullLayout || passes++ >= 6) return gd;
      var fix = {layout: {}, restyle: []};
      try {
        axisFixes(gd, fix);
        colorbarFixes(gd, fix);
        pointLabelFixes(gd, fix);
      } catch (e) {                                  // a figure is never lost to a tidy-up
        if (window.console) console.warn("phone_layout.js: " + e);
        return gd;
      }
      var steps = fix.restyle.map(function (r) {
        return function () { return window.Plotly.restyle(gd, r[0], r[1]); };
      });
      if (Object.keys(fix.layout).length) {
        steps.unshift(function () { return window.Plotly.relayout(gd, fix.layout); });
      }
      if (!steps.length) return gd;
      return steps.reduce(function (done, step) { return done.then(step); }, Promise.resolve())
        .then(pass);
    }
    var end = function () { figure.tidying = false; return gd; };
    return Promise.resolve().then(pass).then(end, end);
  }
  window.bookTidyFigure = tidy;
})();
