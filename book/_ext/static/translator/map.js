/* The translator's attention map as plotly draws it: labels, tick labels, margins.
 *
 * A heatmap's cost is bounded whatever the sentence's length: plotly measures each tick
 * label it draws (1-2 ms each), so at most MAX_LABELS per axis are drawn, every token
 * where they fit and every k-th one of a longer sentence (hover names every cell; a zoom
 * labels every token of the range shown); the margins are computed here from the labels'
 * widths, once, so that plotly lays the figure out in one pass. Pure functions
 * (tests/js/layout.test.js), `measure(texts, size)` given by the caller. */

export const MAX_LABELS = 40;           // tick labels per axis drawn at once
// plotly's toolbar (its modebar: 24 px buttons 2 px under the figure's top right, shown
// once the figure is hovered or tapped). The title starts under it: on a phone the title
// is broken into lines as wide as the screen, and its first line lay under the buttons.
export const TOOLBAR = 28;

// recorder part, name, query side, key side (as transformer_book.viz)
export const KINDS = [
  ["encoder.self", "encoder self-attention", "source", "source"],
  ["decoder.self", "decoder self-attention (masked)", "target", "target"],
  ["decoder.cross", "encoder-decoder attention", "target", "source"],
];

/* The names of a map's axis: "i:piece". A decoder query row is the decoder's input token
 * at i and predicts the token after it: its rows are named by the token they predict. */
export function axisNames(ex, side, predicted = false) {
  const pieces = ex[side];
  if (!predicted) return pieces.map((t, i) => `${i}:${t}`);
  return pieces.map((t, i) => `${i}:\u2192${i + 1 < pieces.length ? pieces[i + 1] : "\u27e8/s\u27e9"}`);
}

/* The axis titles of a map of `kind`. */
export function axisTitles(kind) {
  const [, , qSide, kSide] = KINDS.find((k) => k[0] === kind);
  return {x: `key: ${kSide} token`,
          y: qSide === "target" ? "query: the target token it predicts (\u2192)" : `query: ${qSide} token`};
}

/* The tick labels of an axis of category names, of those from index lo to hi: each one
   where at most `most` (and MAX_LABELS) are, else every k-th (the first always). */
export function tickLabels(names, lo = 0, hi = names.length - 1, most = MAX_LABELS) {
  lo = Math.max(0, Math.ceil(lo));
  hi = Math.min(names.length - 1, Math.floor(hi));
  const stride = Math.max(1, Math.ceil((hi - lo + 1) / Math.max(2, Math.min(most, MAX_LABELS))));
  const vals = [];
  for (let i = lo; i <= hi; i += stride) vals.push(names[i]);
  return {tickmode: "array", tickvals: vals, ticktext: vals, stride};
}

export const axisTicks = ({tickmode, tickvals, ticktext}) => ({tickmode, tickvals, ticktext});

/* An axis title that says when only some tokens are labelled. */
export function axisTitle(text, ticks) {
  return ticks.stride > 1 ? `${text} (1 in ${ticks.stride} labelled)` : text;
}

/* Margins, the title's pad, height and how many labels fit on each axis, for a map of
   names xs by ys drawn `width` px wide (narrow: the phone's layout). */
export function mapFrame(xs, ys, width, narrow, measure) {
  const tick = narrow ? 9 : 11, titleSize = narrow ? 12 : 14;
  // rows of 13 px while every token is labelled; a longer map stays within the screen
  const height = Math.max(narrow ? 420 : 620, 260 + 13 * Math.min(ys.length, MAX_LABELS));
  // x labels at -60 degrees take 1.4 font sizes each; margins from the widest label
  const yLabels = measure(ys, tick) + (narrow ? 4 : 6);
  const xLabels = measure(xs, tick) * Math.sin(Math.PI / 3) + tick;
  // the title's pad above its first line's baseline: the toolbar's row and the line's height
  const titlePad = narrow ? TOOLBAR + 20 : 34;
  const margin = {t: 50 + titlePad, l: Math.ceil(yLabels + 1.3 * titleSize + 2), r: narrow ? 2 : 110,
                  b: Math.ceil(xLabels + 2.2 * titleSize)};
  const fit = {x: (width - margin.l - margin.r) / (1.4 * tick),
               y: (height - margin.t - margin.b - (narrow ? 100 : 0)) / (1.3 * tick)};
  return {tick, titleSize, titlePad, height, margin, fit};
}
