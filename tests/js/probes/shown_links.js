// The texts of the links shown (laid out, visible) in the dialog `dialog` (a selector).
/* global shown */
(dialog) => Array.from(document.querySelectorAll(dialog + ' nav a')).filter(shown)
    .map((a) => a.textContent.trim())
