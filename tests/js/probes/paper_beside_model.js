// Per figure of the paper redrawn beside the model (title holding `words`): its panels
// (left to right on a wide screen, top to bottom on a phone), each with its box, the texts
// of its words and its number of lines; the figure's annotation titles, subtitle and width.
(words) => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter((gd) => (gd._fullLayout.title.text || '').includes(words)).map((gd) => {
    const fl = gd._fullLayout, box = gd.getBoundingClientRect();
    const panels = (fl._subplots.xaxis || []).map((id) => {
      const xa = fl['xaxis' + id.slice(1)], ya = fl[xa.anchor.replace('y', 'yaxis')];
      const left = box.left + xa._offset, top = box.top + ya._offset;
      const words = gd._fullData.filter((t) => t.xaxis === id && t.mode === 'text')
        .map((t) => t.text.map((s) => s.replace(/<\/?b>/g, '')));
      const lines = gd._fullData.filter((t) => t.xaxis === id && t.mode === 'lines').length;
      return {box: [left, top, left + xa._length, top + ya._length], words, lines};
    });
    const titles = Array.from(gd.querySelectorAll('.annotation-text'), (e) => e.textContent);
    return {panels, titles, subtitle: fl.title.subtitle ? fl.title.subtitle.text : '',
            width: box.width};
  })
