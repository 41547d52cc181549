/* The one name the book's scripts put on the page: `attentionBook`, where a figure's inline
 * script finds `newPlot` (book/transformer_book/site.py writes the call) and the tests find
 * the widgets they drive (`translator`, `training`, `doubt`, `plainMath`). No other script
 * assigns to window or self (tests/test_page_code.py scans for it). */
export const book = globalThis.attentionBook || (globalThis.attentionBook = {});
