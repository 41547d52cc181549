// Each figure's layout, as far as the phone's and the desktop's differ
// (phone_layout.js), as a JSON string.
() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout;
  return JSON.stringify({height: fl.height, wrapper: gd.parentElement.style.height,
    margin: [fl.margin.l, fl.margin.r, fl.margin.t, fl.margin.b],
    legend: fl.showlegend ? [fl.legend.orientation, fl.legend.yref] : null,
    colorbars: gd._fullData.filter((t) => t.visible === true && t.showscale && t.colorbar)
      .map((t) => t.colorbar.orientation),
    domains: Object.keys(fl).filter((k) => /^[xy]axis\d*$/.test(k)).sort()
      .map((k) => k + ' ' + fl[k].domain.map((d) => d.toFixed(3)))});
})
