// The search fields and buttons laid out and visible on the page, each as its HTML's start.
() => Array.from(document.querySelectorAll(
  'input[type=search], .search-button-field, button.search-button')).filter((e) => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
}).map((e) => e.outerHTML.slice(0, 80))
