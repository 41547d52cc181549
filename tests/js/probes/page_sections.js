// The page's section titles (its h2s), without their header links.
() => Array.from(document.querySelectorAll('article section > h2'), (h) => {
    const c = h.cloneNode(true);
    c.querySelectorAll('.headerlink').forEach((x) => x.remove());
    return c.textContent.trim(); })
