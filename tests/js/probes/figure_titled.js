// The first plotly figure whose title holds `words`, or null.
(words) => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .find((gd) => (gd._fullLayout.title.text || '').includes(words)) || null
