// The translator's attention map: its toolbar's box (null while hidden), its buttons' and
// its title's boxes, and its title's lines.
/* global shown */
() => {
  const gd = document.querySelector('.lt-plot');
  const box = (e) => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const bar = gd.querySelector('.modebar');
  return {modebar: bar && shown(bar) ? box(bar) : null,
          buttons: Array.from(gd.querySelectorAll('.modebar-btn'), box),
          title: Array.from(gd.querySelectorAll('.gtitle tspan, .gtitle'), box),
          lines: Array.from(gd.querySelectorAll('.gtitle tspan.line'), (t) => t.textContent)};
}
