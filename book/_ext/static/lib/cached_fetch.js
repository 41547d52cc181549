/* The one download path of the book's in-page code: the translator's worker, the training
 * panel's worker and the check of a reader's own files use it.
 *
 * cachedBytes(url, sha, {cache, onBytes}): the bytes of url, from the Cache API when it
 * holds this version (its SHA-256 in the key; older versions of the same url are
 * deleted), else from the network; checked against sha where the browser can hash (a
 * secure context); onBytes(n) as they arrive. `env` ({caches, fetch, crypto, base}) stands
 * in for the browser's in tests. sha256(bytes): the hex SHA-256, or null outside a secure
 * context. */

const browser = () => ({caches: globalThis.caches, fetch: globalThis.fetch && globalThis.fetch.bind(globalThis),
                        crypto: globalThis.crypto, base: globalThis.location && globalThis.location.href});

export async function sha256(bytes, crypto = globalThis.crypto) {
  if (!(crypto && crypto.subtle)) return null;                   // not a secure context
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function readAll(response, onBytes) {
  const chunks = [];
  let total = 0;
  const reader = response.body.getReader();
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
  return bytes;
}

export async function cachedBytes(url, sha, {cache: cacheName, onBytes} = {}, env = browser()) {
  const cache = env.caches && cacheName ? await env.caches.open(cacheName).catch(() => null) : null;
  const key = `${url}?sha256=${sha}`;
  let response = cache ? await cache.match(key) : undefined;
  const cached = !!response;
  if (!response) {
    response = await env.fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${response.statusText}`);
  }
  const bytes = await readAll(response.clone(), onBytes);
  const digest = await sha256(bytes, env.crypto);
  if (digest && digest !== sha) {
    if (cached) await cache.delete(key).catch(() => {});
    throw new Error(`${url} does not match the page's checksum: the site holds files of ` +
                    "two builds; reload the page later");
  }
  if (cache && !cached) {
    const full = new URL(key, env.base).href;
    for (const old of await cache.keys().catch(() => [])) {
      if (old.url.startsWith(new URL(url, env.base).href + "?") && old.url !== full) {
        await cache.delete(old).catch(() => {});
      }
    }
    await cache.put(key, response).catch(() => {});            // e.g. over quota: no cache
  }
  return bytes;
}
