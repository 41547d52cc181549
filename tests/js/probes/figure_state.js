// One figure's title, active slider step, visible traces and their data.
(gd) => ({title: gd._fullLayout.title.text,
          active: gd._fullLayout.sliders.length ? gd._fullLayout.sliders[0].active : null,
          visible: gd.data.map((t, i) => t.visible === false ? -1 : i).filter((i) => i >= 0),
          z: JSON.stringify(gd.data.filter((t) => t.visible !== false).map((t) => t.z || t.y))})
