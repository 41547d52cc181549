/* Small helpers of the page's widgets. */

/* An element: attributes (`class` and `text` set its class name and text), then children. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c) e.append(c);
  return e;
}

/* fn() once the page is parsed (at once when it is). */
export function whenReady(fn) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", fn);
  else fn();
}

/* Resolves after the next frame has been painted. */
export const afterPaint = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));

export function mib(bytes) {
  return (bytes / 2 ** 20).toFixed(1) + " MiB";
}
