// The texts of the links shown (laid out, visible) in the dialog `dialog` (a selector).
(dialog) => Array.from(document.querySelectorAll(dialog + ' nav a'))
    .filter((a) => { const b = a.getBoundingClientRect();
                     return b.width > 0 && b.height > 0 && getComputedStyle(a).visibility !== 'hidden'; })
    .map((a) => a.textContent.trim())
