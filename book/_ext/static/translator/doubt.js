/* Why a translation should not be trusted, or null: transformer.doubt.doubt, the same rule
 * (tests/test_doubt.py runs both on the same cases). Half the source pieces unknown; a word
 * or a pair of words three times back to back, three or more words twice; a sub-word piece
 * or a pair of them three times back to back inside one word. */
const WORD_START = "\u2581";
const EDGES = /^[.,;:!?"'«»„“”]+|[.,;:!?"'«»„“”]+$/g;

/* The first run of n <= longest items repeated back to back (an item or a pair three
 * times, three or more items twice), or null. */
function loop(items, longest) {
  for (let n = 1; n <= Math.min(longest, Math.floor(items.length / 2)); n++) {
    const times = n <= 2 ? 3 : 2;
    for (let start = 0; start + n * times <= items.length; start++) {
      const gram = items.slice(start, start + n).join("\u0000");
      let repeated = true;
      for (let k = 1; k < times && repeated; k++) {
        repeated = items.slice(start + k * n, start + (k + 1) * n).join("\u0000") === gram;
      }
      if (repeated) return items.slice(start, start + n);
    }
  }
  return null;
}

export function doubt(sourceIds, unk, text, pieces = []) {
  const unknown = sourceIds.filter((i) => i === unk).length;
  if (sourceIds.length && 2 * unknown >= sourceIds.length) {
    return `most of the input is unknown to the model (${unknown} of ${sourceIds.length} pieces)`;
  }
  const words = text.split(/\s+/).filter((w) => w).map((w) => w.replace(EDGES, ""));
  const gram = loop(words, words.length);
  if (gram) return `the translation repeats "${gram.join(" ")}" (a loop)`;
  let word = [];
  for (const piece of pieces.concat([WORD_START])) {
    if (piece.startsWith(WORD_START)) {
      const inside = loop(word.map((p) => p.replace(/^\u2581+/, "")), 2);
      if (inside) {
        return `the translation repeats "${inside.join("")}" inside ` +
               `"${word.join("").replace(/^\u2581+/, "")}" (a loop)`;
      }
      word = [];
    }
    word.push(piece);
  }
  return null;
}
