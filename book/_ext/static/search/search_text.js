/* Search snippets from the chapters' prose (book/_ext/book_search.py): Sphinx makes each
 * snippet from the text of the result page's [role="main"], which in this theme also holds
 * the page's header, its "Contents" boxes (one for print), the code cells with their
 * "Show code cell source" toggles, the paper's quotations (the same in several chapters),
 * displayed equations and the TeX of inline maths. The snippet's text keeps the page's own
 * sentences: everything else is removed, inline maths is written as plain text (\(d_k\)
 * as d_k, \sqrt{d_k} as √d_k), and runs of white space become one space. */
import {book} from "../lib/namespace.js";

const NOT_PROSE = [".bd-header-article", ".bd-sidebar-secondary", ".bd-toc", ".prev-next-area",
  ".bd-footer-article", "div.cell", "details.hide", ".cell_input", ".cell_output",
  "div.highlight", "pre", "nav", ".toctree-wrapper", ".live-translator", ".onlyprint",
  "blockquote", "div.math", "mjx-container", "svg", "table", "figure", ".headerlink",
  "script", "style", "footer", ".bd-footer", ".prev-next-footer", ".literal-block-wrapper"].join(", ");

const SYMBOLS = {cdot: "·", times: "×", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠",
  neq: "≠", in: "∈", infty: "∞", sum: "Σ", prod: "Π", dots: "…", ldots: "…", cdots: "…",
  approx: "≈", to: "→", rightarrow: "→", leftarrow: "←", top: "⊤", log: "log", exp: "exp",
  max: "max", min: "min", mid: "|", softmax: "softmax", alpha: "α", beta: "β", gamma: "γ", delta: "δ",
  epsilon: "ε", varepsilon: "ε", theta: "θ", lambda: "λ", mu: "μ", pi: "π", sigma: "σ",
  tau: "τ", phi: "φ", omega: "ω", Delta: "Δ", Sigma: "Σ", quad: " ", qquad: " ",
  left: "", right: "", big: "", Big: "", mathbb: "", displaystyle: ""};

/* TeX as a reader would say it in plain text: no backslash, no braces, no dollar. */
function plainMath(tex) {
  let s = tex.trim().replace(/^\\\(|\\\)$|^\\\[|\\\]$|^\$+|\$+$/g, "");
  for (let i = 0; i < 4; i++) {          // nested commands: innermost first
    s = s.replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "$1/$2")
      .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√$1")
      .replace(/\\(?:text|mathrm|mathbf|mathit|operatorname|textrm|textbf|mathcal)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\mathbb\s*\{R\}/g, "ℝ")
      .replace(/([_^])\{([^{}]*)\}/g, "$1$2");      // d_{model} inside \sqrt{...}
  }
  s = s.replace(/\\([,;:! ]|_|%|#|&)/g, (m, c) => (c === "_" || c === "%" || c === "#" || c === "&" ? c : " "))
    .replace(/\\([A-Za-z]+)/g, (m, name) => (name in SYMBOLS ? SYMBOLS[name] : name))
    .replace(/[{}$\\]/g, "");
  return s.replace(/\s+/g, " ").trim();
}

function proseText(element) {
  element.querySelectorAll(NOT_PROSE).forEach((el) => el.remove());
  element.querySelectorAll(".math").forEach((el) => {          // inline maths
    el.replaceWith(element.ownerDocument.createTextNode(plainMath(el.textContent)));
  });
  return element.textContent.replace(/\s+/g, " ").trim();
}

function patchSearchText() {
  // the theme loads this before searchtools.js: patch once both have run (before the
  // search fetches its result pages, which happens after DOMContentLoaded)
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const main = doc.querySelector('[role="main"]');
    if (!main) return "";
    // a section whose only match was in what is removed has no prose of its own: the page's
    let section = null;
    try { section = anchor ? main.querySelector(anchor) : null; } catch { section = null; }
    const text = section ? proseText(section) : "";
    return text || proseText(main);
  };
}
book.plainMath = plainMath;      // for the tests
document.addEventListener("DOMContentLoaded", patchSearchText);
