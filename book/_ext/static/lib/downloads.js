/* The download lists the build writes into a widget's element (data-files): groups of
 * {name: {bytes, sha256, part?}}. The button announces their total; the worker fetches
 * each listed file by its SHA-256 (cached_fetch.js); "code" is the worker's own modules. */

export function totalBytes(files) {
  let n = 0;
  for (const group of Object.values(files || {})) for (const f of Object.values(group)) n += f.bytes;
  return n;
}

/* The name of the file of `part` in a group ("script", "module", "wasm", ...). */
export function partName(group, part) {
  const found = Object.keys(group || {}).find((name) => group[name].part === part);
  if (!found) throw new Error(`this page lists no ${part} file`);
  return found;
}
