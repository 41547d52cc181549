// Whether Sphinx's search has said "finished" and written each result's snippet.
() => /finished/.test(
  document.querySelector('#search-results').textContent) && Array.from(
  document.querySelectorAll('#search-results li')).every(
  (li) => li.querySelector('p.context'))
