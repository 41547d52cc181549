// Each result of the search page: [href, snippet] (a result without a snippet: "").
() => Array.from(document.querySelectorAll('#search-results li'),
  (li) => [li.querySelector('a').getAttribute('href'),
           (li.querySelector('p.context') || {textContent: ''}).textContent])
