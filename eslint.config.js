// The linter of the book's in-page code (book/_ext/static) and its unit tests (tests/js):
// ES modules in one dialect (ES2022), the browser's and workers' globals, and the
// vendored libraries' globals where a module uses them; the browser tests' probes
// (tests/js/probes) are the page's code too.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["book/_ext/static/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: {...globals.browser, ...globals.worker, Plotly: "readonly", Search: "readonly"},
    },
    rules: {
      "no-var": "error",
      "prefer-const": "error",
      "prefer-arrow-callback": "error",
      "eqeqeq": ["error", "always", {null: "ignore"}],
      "no-implicit-globals": "error",
      "no-restricted-globals": ["error", "event", "name", "status"],
      "no-unused-vars": ["error", {args: "none"}],
    },
  },
  {
    files: ["tests/js/**/*.js"],
    ignores: ["tests/js/probes/**", "tests/js/workers/**"],
    languageOptions: {ecmaVersion: 2022, sourceType: "module", globals: {...globals.node}},
  },
  {
    // the probes the browser tests hand to Playwright's page.evaluate (tests/site_checks.py's
    // probe()): each file one function expression, run in the page
    files: ["tests/js/probes/**/*.js"],
    languageOptions: {ecmaVersion: 2022, sourceType: "script", globals: {...globals.browser}},
    rules: {"no-unused-expressions": "off"},
  },
  {
    // the workers a browser test serves beside the page's own (their imports are the
    // staged page code's, tests/test_page_training.py)
    files: ["tests/js/workers/**/*.js"],
    languageOptions: {ecmaVersion: 2022, sourceType: "module",
                      globals: {...globals.worker, tf: "readonly"}},
  },
];
