// Figures drawn at another width than their box's (plotly's responsive resize hears only
// the window's resize event): [title, drawn width, box width].
() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter((gd) => gd._fullLayout && gd.getBoundingClientRect().width > 0 &&
          Math.abs(gd._fullLayout.width - gd.getBoundingClientRect().width) >= 1)
  .map((gd) => [(gd._fullLayout.title.text || '').slice(0, 50), gd._fullLayout.width,
                Math.round(gd.getBoundingClientRect().width)])
