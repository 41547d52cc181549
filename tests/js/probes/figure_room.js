// Each figure's title, the widths of its plotting areas, and the boxes of its titles
// and its controls (menus, sliders, colour bars, legends): [left, top, right, bottom].
() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
    const fl = gd._fullLayout;
    const box = (sel) => Array.from(gd.querySelectorAll(sel), (e) => {
      const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; })
      .filter((b) => b[2] > b[0] && b[3] > b[1]);
    const panels = (fl._subplots.xaxis || []).map((id) => fl['xaxis' + id.slice(1)])
      .filter((a) => a && a.visible !== false).map((a) => a._length);
    const text = (t) => (t && typeof t === 'object') ? (t.text || '') : (t || '');
    return {title: text(fl.title), panels, titles: box('.gtitle, .gtitle-subtitle'),
            controls: box('.updatemenu-header-group, .slider-container, .colorbar, .legend')};
  })
