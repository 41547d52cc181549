// Narrows every figure's box to its text column's width less 40 px, with no window resize
// event (as a sidebar shown or a scroll bar does), and returns that width.
() => {
  const gd = document.querySelector('.js-plotly-plot');
  const column = gd.parentElement.parentElement;
  const width = Math.round(column.getBoundingClientRect().width) - 40;
  for (const g of document.querySelectorAll('.js-plotly-plot'))
    g.parentElement.style.width = width + 'px';
  return width;
}
