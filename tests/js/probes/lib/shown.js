// Whether the reader sees element `e`: laid out (a box of some width and height), neither
// hidden (`visibility`, `display`) nor transparent (`opacity`); an SVG text also has words,
// a fill that is not transparent and a size above 2 px. The probes' one visibility
// predicate: a probe names it on a `/* global shown */` line, and tests/site_checks.py's
// probe() puts this declaration in front of the probe.
/* exported shown */
function shown(e) {
  const s = getComputedStyle(e), box = e.getBoundingClientRect();
  if (box.width === 0 || box.height === 0 || s.visibility === 'hidden' || s.display === 'none' ||
      Number(s.opacity) === 0) return false;
  return !(e instanceof SVGTextContentElement) || (e.textContent.trim() !== '' &&
    Number(s.fillOpacity) > 0 && !/rgba\(.*,\s*0\)$/.test(s.fill) && parseFloat(s.fontSize) > 2);
}
