// Draws a bar chart of 24 rows on a log axis from 0.3 to 3 through the page's newPlot,
// and returns the labels of its x and y ticks.
async () => {
  const box = document.createElement('div');
  document.querySelector('main article, [role=main]').prepend(box);
  const names = Array.from({length: 24}, (_, i) => 'row-' + String.fromCharCode(65 + i) + i);
  const ratio = names.map((_, i) => 0.3 * Math.pow(10, ((i * 7) % 24) / 23));     // 0.3 to 3
  const gd = document.createElement('div');
  box.append(gd);
  await window.attentionBook.newPlot(gd, [{type: 'bar', x: names, y: ratio, name: 'ratio'}],
    {title: {text: 'a log axis within one power of ten'}, height: 460,
     xaxis: {title: {text: 'row'}, tickangle: -45}, yaxis: {title: {text: 'ratio'}, type: 'log'}},
    {responsive: true});
  await new Promise((r) => setTimeout(r, 300));
  const labels = (axis) => Array.from(gd.querySelectorAll('.' + axis + 'tick > text'), (t) => t.textContent);
  const out = {x: labels('x'), y: labels('y')};
  box.remove();
  return out;
}
