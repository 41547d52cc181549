// Texts of a figure (plotly's or a diagram's) drawn outside the figure's box, the
// screen, or the plotting area that clips them: [title, text, its box, the box it must lie in].
/* global shown */
() => {
  // the plotting area's clip-path of a text (plotly clips labels of points there)
  const clipBox = (t) => {
    for (let e = t; e && e.getAttribute; e = e.parentNode) {
      const ref = /url\(["']?#([^"')]+)/.exec(e.getAttribute('clip-path') || '');
      const clip = ref && document.getElementById(ref[1]);
      const rect = clip && clip.querySelector('rect');
      if (!rect) continue;
      const m = e.getScreenCTM(), x = +rect.getAttribute('x') || 0, y = +rect.getAttribute('y') || 0;
      const xs = [x, x + +rect.getAttribute('width')].map((u) => m.a * u + m.e);
      const ys = [y, y + +rect.getAttribute('height')].map((v) => m.d * v + m.f);
      return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
    }
    return [-Infinity, -Infinity, Infinity, Infinity];
  };
  const out = [];
  for (const fig of document.querySelectorAll('.js-plotly-plot, svg.book-diagram')) {
    const f = fig.getBoundingClientRect();
    const right = Math.min(f.right, document.documentElement.clientWidth);
    for (const t of fig.querySelectorAll('svg text')) {
      if (!shown(t)) continue;
      const b = t.getBoundingClientRect();
      const c = clipBox(t);
      const box = [Math.max(f.left, 0, c[0]), Math.max(f.top, c[1]), Math.min(right, c[2]), Math.min(f.bottom, c[3])];
      if (b.left < box[0] - 1 || b.right > box[2] + 1 || b.top < box[1] - 1 || b.bottom > box[3] + 1) {
        const title = fig._fullLayout ? (fig._fullLayout.title.text || '') : fig.getAttribute('aria-label');
        out.push([title.slice(0, 50), t.textContent.slice(0, 40),
                  [b.left, b.top, b.right, b.bottom].map(Math.round), box.map(Math.round)]);
      }
    }
  }
  return out;
}
