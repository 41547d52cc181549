// Each plotly figure of the page: its title, its axes' and colour bars' titles, whether
// it is drawn, its size and its number of sliders.
() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout || {};
  const text = (t) => (t && typeof t === 'object') ? (t.text || '') : (t || '');
  const sub = fl._subplots || {};
  const axes = {};
  for (const id of [...(sub.xaxis || []), ...(sub.yaxis || [])]) {
    const name = id[0] + 'axis' + id.slice(1);
    if (fl[name] && fl[name].visible === false) continue;     // a hidden axis (a diagram)
    axes[name] = text(fl[name] && fl[name].title);
  }
  const colorbars = (gd.data || [])
    .filter((t) => ['heatmap', 'contour', 'histogram2d'].includes(t.type) && t.showscale !== false)
    .map((t) => text(t.colorbar && t.colorbar.title));
  const box = gd.getBoundingClientRect();
  return {title: text(fl.title), axes, colorbars, drawn: !!gd.querySelector('svg.main-svg'),
          width: box.width, height: box.height, sliders: (gd.layout.sliders || []).length};
})
