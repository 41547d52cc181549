/* The training panel's canvases: an attention map and the loss and accuracy curves. */
/* White to dark blue, for weights in [0, 1]. */
export function colour(w) {
  const t = Math.max(0, Math.min(1, w));
  const mix = (a, b) => Math.round(a + (b - a) * t);
  return `rgb(${mix(247, 8)},${mix(251, 48)},${mix(255, 107)})`;
}

/* One attention map (rows: queries, columns: keys) with its tokens along the edges,
 * `width` CSS pixels wide (read by the caller: reading a size after a write would make
 * the browser lay out the page again, once per map). */
export function drawMap(canvas, width, weights, rows, cols) {
  const dpr = devicePixelRatio || 1;
  const margin = 14, cell = (width - margin) / cols.length;
  const height = margin + cell * rows.length;
  canvas.style.height = `${height}px`;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const g = canvas.getContext("2d");
  g.scale(dpr, dpr);
  g.fillStyle = "#fff";
  g.fillRect(0, 0, width, height);
  for (let i = 0; i < rows.length; i++) {
    for (let j = 0; j < cols.length; j++) {
      g.fillStyle = colour(weights[i * cols.length + j]);
      g.fillRect(margin + j * cell, margin + i * cell, Math.ceil(cell), Math.ceil(cell));
    }
  }
  g.fillStyle = "#333";
  g.font = `${Math.min(11, Math.max(8, cell * 0.9))}px sans-serif`;
  g.textAlign = "center";
  g.textBaseline = "middle";
  const short = (t) => t === "<bos>" ? "▸" : t === "<eos>" ? "◂" : t;
  cols.forEach((t, j) => g.fillText(short(t), margin + (j + 0.5) * cell, margin / 2));
  rows.forEach((t, i) => g.fillText(short(t), margin / 2, margin + (i + 0.5) * cell));
}

/* The loss (log scale, left) and the sequence accuracy (0-1, right) against the step. */
export function drawCurve(canvas, width, height, progress, maxSteps, batch) {
  const dpr = devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const g = canvas.getContext("2d");
  g.scale(dpr, dpr);
  const left = 40, right = 40, top = 10, bottom = 28;
  const w = width - left - right, h = height - top - bottom;
  g.fillStyle = "#fff";
  g.fillRect(0, 0, width, height);
  g.strokeStyle = "#999";
  g.strokeRect(left, top, w, h);
  const last = progress.length ? progress[progress.length - 1].step : 1;
  const xmax = Math.max(50, Math.min(maxSteps, Math.ceil(last * 1.25 / 50) * 50));
  const x = (s) => left + w * s / xmax;
  const lo = Math.log10(1e-3), hi = Math.log10(5);
  const yLoss = (l) => top + h * (hi - Math.log10(Math.max(1e-3, Math.min(5, l)))) / (hi - lo);
  const yAcc = (a) => top + h * (1 - a);
  const line = (colour, y, key) => {
    g.strokeStyle = colour;
    g.lineWidth = 1.5;
    g.beginPath();
    progress.forEach((p, i) => (i ? g.lineTo : g.moveTo).call(g, x(p.step), y(p[key])));
    g.stroke();
  };
  line("#1f77b4", yLoss, "loss");
  line("#ff7f0e", yAcc, "accuracy");
  g.fillStyle = "#333";
  g.font = "10px sans-serif";
  g.textAlign = "center";
  g.fillText(`step (batch of ${batch})`, left + w / 2, height - 4);
  g.fillText("0", x(0), top + h + 10);
  g.fillText(String(xmax), x(xmax) - 8, top + h + 10);
  g.textAlign = "right";
  g.fillStyle = "#1f77b4";
  for (const v of [1, 0.1, 0.01, 0.001]) g.fillText(String(v), left - 3, yLoss(v) + 3);
  g.textAlign = "left";
  g.fillStyle = "#ff7f0e";
  for (const v of [0, 0.5, 1]) g.fillText(`${v * 100}%`, left + w + 3, yAcc(v) + 3);
  g.save();
  g.translate(10, top + h / 2);
  g.rotate(-Math.PI / 2);
  g.textAlign = "center";
  g.fillStyle = "#1f77b4";
  g.fillText("loss", 0, 0);
  g.restore();
  g.save();
  g.translate(width - 4, top + h / 2);
  g.rotate(-Math.PI / 2);
  g.textAlign = "center";
  g.fillStyle = "#ff7f0e";
  g.fillText("sequence accuracy", 0, 0);
  g.restore();
}
