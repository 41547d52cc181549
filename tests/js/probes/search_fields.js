// The search fields and buttons laid out and visible on the page, each as its HTML's start.
/* global shown */
() => Array.from(document.querySelectorAll(
  'input[type=search], .search-button-field, button.search-button')).filter(shown)
  .map((e) => e.outerHTML.slice(0, 80))
