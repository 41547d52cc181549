// The attention explorer's menu: each button's label, its first trace's rows (y) and the
// y axis title it sets.
(gd) => gd.layout.updatemenus[0].buttons.map((b) => ({label: b.label, y: b.args[0].y[0],
                                                      title: b.args[1]['yaxis.title.text']}))
