// The sidebars' toggle buttons (theme/toggles.js) over fake buttons: a click on any toggle
// but the first of its kind reaches the first, once, and nothing of the theme's on it.
import {test} from "node:test";
import assert from "node:assert/strict";
import {forwardToggles} from "../../book/_ext/static/theme/toggles.js";

class Button extends EventTarget {
  click() { return this.dispatchEvent(new Event("click", {cancelable: true})); }
}

function page(counts) {
  const buttons = Object.fromEntries(Object.entries(counts).map(
    ([selector, n]) => [selector, Array.from({length: n}, () => new Button())]));
  return {buttons, querySelectorAll: (selector) => buttons[selector] || []};
}

test("a click on a later toggle clicks the first of its kind, once", () => {
  const root = page({".primary-toggle": 2, ".secondary-toggle": 3});
  const [navbar, article] = root.buttons[".primary-toggle"];
  const seen = [];
  navbar.addEventListener("click", () => seen.push("primary"));            // the theme's
  root.buttons[".secondary-toggle"][0].addEventListener("click", () => seen.push("secondary"));
  forwardToggles(root);
  article.click();
  root.buttons[".secondary-toggle"][2].click();
  navbar.click();                                                            // as before
  assert.deepEqual(seen, ["primary", "secondary", "primary"]);
});

test("a handler a later version puts on a later toggle is not run besides", () => {
  // in a browser a capturing listener on the button runs before its other ones; here,
  // where listeners run in the order they were added, the theme's is added after ours
  const root = page({".primary-toggle": 2});
  const [navbar, article] = root.buttons[".primary-toggle"];
  const seen = [];
  navbar.addEventListener("click", () => seen.push("bound"));
  forwardToggles(root);
  article.addEventListener("click", () => seen.push("its own"));           // bound upstream
  assert.equal(article.click(), false);                                      // default prevented
  assert.deepEqual(seen, ["bound"]);
});

test("a page with one toggle of a kind, or none, is left as it is", () => {
  const root = page({".primary-toggle": 1});
  const seen = [];
  root.buttons[".primary-toggle"][0].addEventListener("click", () => seen.push("bound"));
  forwardToggles(root);
  root.buttons[".primary-toggle"][0].click();
  assert.deepEqual(seen, ["bound"]);
});
