// Each drawn diagram (svg.book-diagram): its box, its texts' boxes, and each block's
// rectangle, its texts' boxes and words, and its links.
() => Array.from(document.querySelectorAll('svg.book-diagram'), (svg) => {
    const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
    return {svg: box(svg), texts: Array.from(svg.querySelectorAll('text'), (t) => [t.textContent, box(t)]),
            blocks: Array.from(svg.querySelectorAll('g.block'), (g) => ({
              rect: box(g.querySelector('rect')), texts: Array.from(g.querySelectorAll('text'), box),
              labels: Array.from(g.querySelectorAll('text'), (t) => t.textContent),
              links: Array.from(g.querySelectorAll('a'), (a) => a.getAttribute('href'))}))};
  })
