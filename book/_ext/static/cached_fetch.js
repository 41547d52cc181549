/* The one download path of the book's in-page code: the translator's worker
 * (browser_model.js), the training panel's worker (train_worker.js) and the explorer's
 * check of a reader's own files (explorer_files.js) load this file.
 *
 * bookFetch.cachedBytes(url, sha, cacheName, onBytes): the bytes of url, from the Cache
 * API when it holds this version (its SHA-256 in the key; older versions of the same url
 * are deleted), else from the network; checked against sha where the browser can hash (a
 * secure context); onBytes(n) as they arrive.
 * bookFetch.sha256(bytes): the hex SHA-256 of bytes, or null outside a secure context.
 */
(function (root) {
  "use strict";

  async function sha256(bytes) {
    if (!(root.crypto && root.crypto.subtle)) return null;        // not a secure context
    const digest = await root.crypto.subtle.digest("SHA-256", bytes);
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function cachedBytes(url, sha, cacheName, onBytes) {
    const cache = (typeof caches !== "undefined") ?
      await caches.open(cacheName).catch(() => null) : null;
    const key = `${url}?sha256=${sha}`;
    let response = cache ? await cache.match(key) : undefined;
    const cached = !!response;
    if (!response) {
      response = await fetch(url);
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
    }
    const chunks = [];
    let total = 0;
    const reader = response.clone().body.getReader();
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.length;
      if (onBytes) onBytes(value.length);
    }
    const bytes = new Uint8Array(total);
    let at = 0;
    for (const c of chunks) { bytes.set(c, at); at += c.length; }
    const digest = await sha256(bytes);
    if (digest && digest !== sha) {
      if (cached) await cache.delete(key).catch(() => {});
      throw new Error(`${url} does not match the page's checksum: the site holds files of ` +
                      `two builds; reload the page later`);
    }
    if (cache && !cached) {
      for (const old of await cache.keys().catch(() => [])) {
        if (old.url.startsWith(url + "?") && old.url !== new URL(key, root.location.href).href) {
          await cache.delete(old).catch(() => {});
        }
      }
      await cache.put(key, response).catch(() => {});          // e.g. over quota: no cache
    }
    return bytes;
  }

  root.bookFetch = {cachedBytes, sha256};
})(typeof self !== "undefined" ? self : this);
