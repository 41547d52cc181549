// Texts of one figure drawn on top of each other: each text's box turned with it (tick
// labels at -45 degrees), 1 px inside its edges, tested pairwise by separating axes.
/* global shown */
() => {
  const quad = (t) => {
    const b = t.getBBox(), m = t.getScreenCTM(), i = Math.min(1, b.width / 4, b.height / 4);
    return [[b.x + i, b.y + i], [b.x + b.width - i, b.y + i], [b.x + b.width - i, b.y + b.height - i],
            [b.x + i, b.y + b.height - i]].map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const apart = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
      const a = p.map(([x, y]) => nx * x + ny * y), b = q.map(([x, y]) => nx * x + ny * y);
      if (Math.max(...a) <= Math.min(...b) || Math.max(...b) <= Math.min(...a)) return true;
    }
    return false;
  };
  const kind = (t) => (t.closest('g[class]') || t).getAttribute('class');
  const out = [];
  for (const fig of document.querySelectorAll('.js-plotly-plot, svg.book-diagram')) {
    const texts = Array.from(fig.querySelectorAll('svg text')).filter(shown)
      .filter((t) => t.getBBox().width > 0).map((t) => [t, quad(t)]);
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      if (apart(texts[i][1], texts[j][1])) continue;
      const title = fig._fullLayout ? (fig._fullLayout.title.text || '') : fig.getAttribute('aria-label');
      out.push([title.slice(0, 40), [texts[i][0].textContent.slice(0, 30), kind(texts[i][0])],
                [texts[j][0].textContent.slice(0, 30), kind(texts[j][0])]]);
    }
  }
  return out;
}
