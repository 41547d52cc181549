// Elements laid out past the right edge of a screen `width` px wide: those inside a box
// that scrolls or clips sideways (a code cell, a wide table's wrapper, displayed maths)
// are that box's; hidden and off-canvas elements (the sidebars' drawers) are not laid out
// for the reader. Each as [tag.class, right edge, text].
(width) => {
  const out = [];
  const clipped = (e) => { for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (/(auto|scroll|hidden|clip)/.test(s.overflowX) && a.getBoundingClientRect().right <= width + 0.5) return true;
      if (s.position === 'fixed' || s.visibility === 'hidden' || s.display === 'none') return true;
    } return false; };
  for (const e of document.body.querySelectorAll('*')) {
    const b = e.getBoundingClientRect();
    if (b.width === 0 || b.height === 0 || b.right <= width + 0.5) continue;
    const s = getComputedStyle(e);
    if (s.visibility === 'hidden' || s.position === 'fixed' || e.closest('dialog:not([open]), .bd-sidebar-primary, .bd-sidebar-secondary, .MathJax_Preview, mjx-assistive-mml')) continue;
    if (clipped(e)) continue;
    out.push([e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : ''),
              Math.round(b.right), (e.textContent || '').trim().slice(0, 40)]);
  }
  return out;
}
