/* The one way the page's code follows a box's size: followWidth(element, onWidth) calls
 * onWidth(width) each time the element's box takes a new width (CSS px), whatever changed
 * it: a window resized, a phone turned, or the page's own layout (a sidebar shown or
 * hidden, a scroll bar, fonts), which can settle after the window's resize event or come
 * without one. It calls once when it starts following (the box's width then); a hidden
 * box (width 0) is not reported, and when shown again its width is. One ResizeObserver
 * serves every box; returns a function that stops following. Where the browser has no
 * ResizeObserver nothing is followed. widthWatcher(Observer) makes such a function over
 * another ResizeObserver (tests/js/resize.test.js hands it a stand-in). */
export function widthWatcher(Observer) {
  const boxes = new Map();               // element -> {width, callbacks}
  let observer = null;
  const changed = (entry) => {
    const box = boxes.get(entry.target);
    const width = entry.contentRect.width;
    if (!box || width === box.width) return;           // only its height changed
    box.width = width;
    if (width) box.callbacks.slice().forEach((onWidth) => onWidth(width));
  };
  return function followWidth(element, onWidth) {
    if (typeof Observer !== "function") return () => {};
    if (!observer) observer = new Observer((entries) => entries.forEach(changed));
    let box = boxes.get(element);
    if (!box) {
      box = {width: undefined, callbacks: []};
      boxes.set(element, box);
      observer.observe(element);
    } else if (box.width) {                            // observed already: its width now
      queueMicrotask(() => { if (box.callbacks.includes(onWidth)) onWidth(box.width); });
    }
    box.callbacks.push(onWidth);
    return () => {
      box.callbacks = box.callbacks.filter((f) => f !== onWidth);
      if (!box.callbacks.length && boxes.get(element) === box) {
        boxes.delete(element);
        observer.unobserve(element);
      }
    };
  };
}

export const followWidth = widthWatcher(globalThis.ResizeObserver);
