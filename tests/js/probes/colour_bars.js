// Each colour bar of a page: its range, its tick labels (text, left, right, drawn at
// all) and its title's box, the figure's box around them.
() => Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap((gd) => {
  const box = gd.querySelector('svg.main-svg').getBoundingClientRect();
  return (gd._fullData || []).filter((t) => t.visible === true && t.showscale && t.colorbar)
    .map((t) => {
      const bar = gd.querySelector('.cb' + t.uid);
      if (!bar) return null;
      const at = (e) => { const r = e.getBoundingClientRect();
                          return [r.left, r.right, r.width > 0 && r.height > 0]; };
      const title = bar.querySelector('.cbtitle text');
      return {figure: (gd._fullLayout.title || {}).text || '', box: [box.left, box.right],
              range: [t.zmin, t.zmax], title: title ? at(title) : null,
              ticks: Array.from(bar.querySelectorAll('.cbaxis text, [class$=tick] > text'))
                .map((e) => [e.textContent, ...at(e)])};
    }).filter(Boolean);
})
