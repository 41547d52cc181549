/* The sidebars' toggle buttons (☰ and "on this page"), every one of them working.
 *
 * pydata-sphinx-theme 0.17 added a second `.primary-toggle` (and `.secondary-toggle`)
 * button, and both themes' handlers bind only the first one in the page
 * (document.querySelector): pydata-sphinx-theme's, which opens a sidebar as a dialog on a
 * narrow screen, and sphinx-book-theme's, which folds the left one away on a wide screen.
 * With sphinx-book-theme 1.3.0 the first is the navbar's, which that theme hides; the
 * buttons a reader sees, in the article's header, did nothing: on a phone the navigation
 * could not be opened on any page (pydata-sphinx-theme#2451, sphinx-book-theme#988). The
 * book takes both themes as jupyter-book 1.0.4 resolves them (today exactly that pair;
 * sphinx-book-theme 1.4.0 needs Sphinx 8), so it hands a click on any other toggle to the
 * first one, whichever that is. Its own handlers stop the click first, so where a later
 * version binds every button the bound one is still clicked once. */

export const TOGGLES = [".primary-toggle", ".secondary-toggle"];

/* In `root` (the page), each toggle but the first of its kind clicks the first. */
export function forwardToggles(root) {
  for (const selector of TOGGLES) {
    const [bound, ...others] = root.querySelectorAll(selector);
    for (const button of others) {
      button.addEventListener("click", (e) => {
        e.preventDefault();
        e.stopImmediatePropagation();
        bound.click();
      }, true);           // capture: before any handler of the theme's on this button
    }
  }
}
