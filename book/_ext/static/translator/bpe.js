/* The BPE encoder of SentencePiece (model_type=bpe, nmt_nfkc normalisation), in the page.
 *
 * Gives the same ids as transformer.Tokenizer.encode for the book's vocabulary
 * (tests/test_browser_model.py checks 200 test sentences in Chromium; tests/js/bpe.test.js
 * checks the merges on a small vocabulary). The steps are
 * SentencePiece's: normalise (NFKC; runs of whitespace become one space, none at the
 * ends), mark word starts with U+2581 and a leading one (add_dummy_prefix), split into
 * characters, then merge, again and again, the adjacent pair whose concatenation is the
 * vocabulary piece with the highest score (the earliest learnt merge), leftmost first on
 * ties. A character outside the vocabulary becomes <unk>, and a run of them one <unk>.
 */
const SPACE = "\u2581";

export class BPE {
  /** pieces: the vocabulary, id -> piece; scores: id -> score; special: ids not to
   *  match in text (pad, bos, eos, unk); unk: the id of <unk>. */
  constructor(pieces, scores, special, unk) {
    this.pieces = pieces;
    this.unk = unk;
    this.index = new Map();
    pieces.forEach((piece, id) => {
      if (!special.includes(id)) this.index.set(piece, id);
    });
    this.scores = scores;
  }

  normalize(text) {
    return text.normalize("NFKC").replace(/[\s\u00a0\u200b\ufeff]+/gu, " ").trim();
  }

  /** The pieces of text, as strings. */
  pieces_of(text) {
    const normal = this.normalize(text);
    if (!normal) return [];
    const symbols = Array.from(SPACE + normal.replace(/ /g, SPACE));
    // Repeatedly merge the best pair. Sentences are short (tens of symbols): a scan of
    // all pairs per merge is simpler than SentencePiece's agenda and gives its order.
    for (;;) {
      let best = -1, bestScore = -Infinity;
      for (let i = 0; i + 1 < symbols.length; i++) {
        const id = this.index.get(symbols[i] + symbols[i + 1]);
        if (id !== undefined && this.scores[id] > bestScore) {
          best = i;
          bestScore = this.scores[id];
        }
      }
      if (best < 0) break;
      symbols.splice(best, 2, symbols[best] + symbols[best + 1]);
    }
    // SentencePiece merges a run of unknown pieces into one (PopulateSentencePieceText):
    // "🙂🙂🙂" is one <unk>, not three
    const merged = [];
    for (const s of symbols) {
      const last = merged.length - 1;
      if (last >= 0 && !this.index.has(s) && !this.index.has(merged[last])) merged[last] += s;
      else merged.push(s);
    }
    return merged;
  }

  /** Token ids of text, without BOS or EOS. */
  encode(text) {
    return this.pieces_of(text).map((p) => {
      const id = this.index.get(p);
      return id === undefined ? this.unk : id;
    });
  }

  /** Text of ids, as SentencePiece decodes: pieces joined, U+2581 -> space, <unk> as
   *  " \u2047 ", special ids skipped. */
  decode(ids, skip) {
    let text = "";
    for (const id of ids) {
      if (skip.includes(id)) continue;
      text += id === this.unk ? " \u2047 " : this.pieces[id];
    }
    text = text.replace(new RegExp(SPACE, "g"), " ");
    return text.startsWith(" ") ? text.slice(1) : text;
  }
}
