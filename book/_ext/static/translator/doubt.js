/* Why a translation should not be trusted, or null: transformer.doubt.doubt, the same rule
 * (tests/test_page_code.py runs both on tests/js/fixtures/doubt.json's cases, and
 * tests/js/doubt.test.js reads them too); its docstring states it. The first of: half the
 * source pieces unknown; a word or a pair of words three times back to back, three or more
 * words twice; a sub-word piece or a pair of them three times back to back inside one
 * word; a number of the source missing or changed; a name of the source missing; a source
 * word of four letters or more that gathered little attention over the translation
 * (coverage). */
const WORD_START = "\u2581";
const PUNCTUATION = ".,;:!?\"'«»„“”";
const strip = (w) => {
  let a = 0, b = w.length;
  while (a < b && PUNCTUATION.includes(w[a])) a++;
  while (b > a && PUNCTUATION.includes(w[b - 1])) b--;
  return w.slice(a, b);
};

// number words and their values (see transformer/doubt.py: English "one" is no number)
const table = (words, more) => Object.assign(
  Object.fromEntries(words.split(" ").map((w, i) => [w, i]).filter(([w]) => w !== "_")), more);
const ENGLISH_NUMBERS = table(
  "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen " +
  "fifteen sixteen seventeen eighteen nineteen",
  {twenty: 20, thirty: 30, forty: 40, fifty: 50, sixty: 60, seventy: 70, eighty: 80,
   ninety: 90, hundred: 100, thousand: 1000});
const GERMAN_NUMBERS = table(
  "null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn " +
  "fünfzehn sechzehn siebzehn achtzehn neunzehn",
  {zwanzig: 20, "dreißig": 30, vierzig: 40, "fünfzig": 50, sechzig: 60, siebzig: 70,
   achtzig: 80, neunzig: 90, hundert: 100, tausend: 1000, zwo: 2, beiden: 2,
   ein: 1, eine: 1, einen: 1, einem: 1, einer: 1, eines: 1});
// capitalised words that are no names: German writes them otherwise
const NOT_NAMES = new Set(("Monday Tuesday Wednesday Thursday Friday Saturday Sunday January " +
  "February March April May June July August September October November December English " +
  "French German Spanish Italian Japanese Chinese Russian").split(" "));
export const COVERED = 0.4;          // the attention a word gathers to be read (doubt.py says how chosen)
const SHORTEST_COVERED = 4;          // letters: shorter words may go untranslated

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

const words = (text) => text.split(/\s+/).map(strip).filter((w) => w);
const isLetter = (c) => /^\p{L}$/u.test(c);          // str.isalpha

/* (word, value) of each run of digits and each number word of `numbers` in text (with
 * `prefix`, a word that begins with a number word, the longest, counts as it too). */
export function numbers(text, numbers, prefix = false) {
  const found = [];
  for (const word of words(text)) {
    for (const digits of word.match(/[0-9]+/g) || []) found.push([digits, Number(digits)]);
    for (const part of word.toLowerCase().split(/-|und(?=[\p{L}\p{N}_])/u)) {
      if (Object.hasOwn(numbers, part)) {
        found.push([word, numbers[part]]);
      } else if (prefix) {
        const starts = Object.keys(numbers).filter((w) => part.startsWith(w));
        if (starts.length) {
          const longest = starts.reduce((a, b) => (b.length > a.length ? b : a));
          found.push([word, numbers[longest]]);
        }
      }
    }
  }
  return found;
}

/* The source's capitalised words inside a sentence (not its first word, nor "I"). */
function names(source) {
  const found = [];
  let first = true;
  for (const raw of source.split(/\s+/).filter((w) => w)) {
    let word = strip(raw);
    if (word.endsWith("'s") || word.endsWith("’s")) word = word.slice(0, -2);
    if (word && !first && /^\p{Lu}/u.test(word) && [...word].every(isLetter) &&
        word !== "I" && !NOT_NAMES.has(word.replace(/s+$/, ""))) found.push(word);
    first = /[.!?:]$/.test(raw.replace(/["'»“”)]+$/, "")) || (first && !word);
  }
  return found;
}

/* The attention each of the first n source pieces gathered over the whole translation
 * (coverage): at each step, the weight the heads give it, averaged over the heads of all
 * layers, summed over the steps; cross: {dims: [layers, heads, q, k], data}. */
export function coverage(cross, n) {
  const [L, H, Q, K] = cross.dims, data = cross.data;
  const total = new Array(Math.min(n, K)).fill(0);
  for (let block = 0; block < L * H; block++) {
    for (let q = 0; q < Q; q++) {
      const row = (block * Q + q) * K;
      for (let k = 0; k < total.length; k++) total[k] += data[row + k];
    }
  }
  return total.map((t) => t / (L * H));
}

/* The first source word of SHORTEST_COVERED letters or more whose pieces gathered less
 * than COVERED of the attention over the whole translation (see coverage). */
function unread(sourcePieces, cross) {
  const n = sourcePieces.length, gathered = coverage(cross, n);
  let word = "", weight = 0;
  const pieces = sourcePieces.concat([WORD_START]);
  for (let k = 0; k < pieces.length; k++) {
    if (pieces[k].startsWith(WORD_START) || k === n) {
      const letters = [...word].filter(isLetter).length;
      if (letters >= SHORTEST_COVERED && weight < COVERED) return word;
      word = ""; weight = 0;
    }
    if (k < n) {
      word += pieces[k].replace(/^\u2581+/, "");
      weight += k < gathered.length ? gathered[k] : 0;
    }
  }
  return null;
}

export function doubt(sourceIds, unk, text, pieces = [], {source = "", sourcePieces = [], cross = null} = {}) {
  const unknown = sourceIds.filter((i) => i === unk).length;
  if (sourceIds.length && 2 * unknown >= sourceIds.length) {
    return `most of the input is unknown to the model (${unknown} of ${sourceIds.length} pieces)`;
  }
  const said = words(text);
  const gram = loop(said, said.length);
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
  const found = new Set(numbers(text, GERMAN_NUMBERS, true).map(([, v]) => v));
  for (const [name, value] of numbers(source, ENGLISH_NUMBERS)) {
    if (!found.has(value)) {
      return `the source's "${name}" is not in the translation (a number dropped or changed)`;
    }
  }
  const lower = said.map((w) => w.toLowerCase());
  for (const name of names(source)) {
    if (!lower.some((w) => w.includes(name.slice(0, 3).toLowerCase()))) {
      return `the name "${name}" is not in the translation (dropped or changed)`;
    }
  }
  if (cross && sourcePieces.length) {
    const missed = unread(sourcePieces, cross);
    if (missed) return `the attention hardly read "${missed}" (a word dropped?)`;
  }
  return null;
}
