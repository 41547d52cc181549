/* manifest.json, the contract of an export (transformer/tools/manifest.py writes it): its
 * format, configuration, special ids, decoding settings, vocabulary, and each file with its
 * part, size, SHA-256 and whether the page downloads it. The page reads the book's, and
 * checks a reader's own export against its own before anything runs. The format this page
 * reads comes from the build (data-format), so that no second copy of it exists. */

const FIELDS = ["config", "special_ids", "decoding", "vocabulary", "scores", "files"];

/* The manifest of `text`, or an Error saying what is wrong with it. */
export function parseManifest(text, format) {
  let manifest;
  try {
    manifest = JSON.parse(text);
  } catch (e) {
    throw new Error(`manifest.json is not JSON (${e.message}): is it the export's?`);
  }
  if (!manifest || manifest.format !== format) {
    throw new Error(`manifest.json has format ${manifest && manifest.format}, this page ` +
                    `reads format ${format}: export the model again with this book's package`);
  }
  for (const field of FIELDS) {
    if (!manifest[field]) throw new Error(`manifest.json has no "${field}": is it the export's?`);
  }
  return manifest;
}

/* The files the page downloads besides the manifest: {name: entry}. */
export function pageFiles(manifest) {
  return Object.fromEntries(Object.entries(manifest.files).filter(([, f]) => f.page));
}

/* The name of the file of `part` ("encoder", "decoder", "weights"). */
export function partFile(manifest, part) {
  const found = Object.keys(manifest.files).find((name) => manifest.files[name].part === part);
  if (!found) throw new Error(`manifest.json lists no ${part} file`);
  return found;
}

/* Each page file of `manifest` among `byName` ({name: {arrayBuffer()}}), checked for its size
 * and SHA-256 (`sha256(bytes)`, null where the browser cannot hash): {name: ArrayBuffer},
 * or an Error naming the first file that is missing or does not match. */
export async function checkedFiles(manifest, byName, sha256) {
  const out = {};
  const wanted = Object.keys(pageFiles(manifest));
  const missing = wanted.filter((n) => !byName[n]);
  if (missing.length) {
    throw new Error(`the model folder lacks ${missing.join(", ")}: choose every file that ` +
                    "`python -m transformer export` wrote (or drop the folder)");
  }
  for (const name of wanted) {
    const entry = manifest.files[name];
    const bytes = await byName[name].arrayBuffer();
    if (bytes.byteLength !== entry.bytes) {
      throw new Error(`${name} has ${bytes.byteLength.toLocaleString("en")} bytes, manifest.json ` +
                      `says ${entry.bytes.toLocaleString("en")}: the file is damaged or from another export`);
    }
    const digest = await sha256(bytes);
    if (digest && digest !== entry.sha256) {
      throw new Error(`${name} does not match manifest.json's checksum: the file is damaged ` +
                      "or from another export");
    }
    out[name] = bytes;
  }
  return out;
}
