/* Search snippets from the chapters' prose (book/_ext/search_page.py): Sphinx makes each
 * snippet from the text of the result page's [role="main"], which in this theme also holds
 * the page's header, its "Contents" boxes (one for print) and the code cells. Remove them. */
function patchSearchText() {
  "use strict";
  // the theme loads this before searchtools.js: patch once both have run (before the
  // search fetches its result pages, which happens after DOMContentLoaded)
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  const NOT_PROSE = [".bd-header-article", ".bd-sidebar-secondary", ".bd-toc", ".prev-next-area",
    ".bd-footer-article", ".cell_input", ".cell_output", "div.highlight", "pre", "nav",
    ".toctree-wrapper", ".live-translator", ".onlyprint"].join(", ");
  const sphinxText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    doc.querySelectorAll(NOT_PROSE).forEach((el) => el.remove());
    // a section whose only match is in code has no prose of its own: the page's then
    const html = doc.documentElement.outerHTML;
    return sphinxText(html, anchor) || sphinxText(html);
  };
}
document.addEventListener("DOMContentLoaded", patchSearchText);
