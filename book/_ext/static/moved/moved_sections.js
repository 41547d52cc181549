// A section that moved to another page: its old address (page#anchor) still reaches it.
// The page's moved anchors come in this script tag's data-moved attribute
// (book/_ext/book_moved.py); an anchor still on the page is left alone.
const moved = JSON.parse(document.querySelector("script[data-moved]").dataset.moved);

function follow() {
  const anchor = decodeURIComponent(location.hash.slice(1));
  if (anchor && !document.getElementById(anchor) && moved[anchor]) {
    location.replace(new URL(moved[anchor], location.href).href);
  }
}

follow();
window.addEventListener("hashchange", follow);
