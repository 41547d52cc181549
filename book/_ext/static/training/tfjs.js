/* TensorFlow.js in the training panel's workers (worker.js): started from the page's
 * cached files, and a batch of the toy tasks as tensors.
 *
 * tfjs-core and its WebAssembly backend (one thread: a static site cannot send the
 * cross-origin isolation headers that threads need) are listed in the page with their
 * size, SHA-256 and part (data-files, written by book/_ext/book_training.py) and kept in
 * the Cache API under their SHA-256: a second visit downloads none of them. TensorFlow.js
 * is a script, not a module: imported from its bytes, it defines its global `tf`. */
/* global tf */
import {cachedBytes} from "../lib/cached_fetch.js";
import {partName} from "../lib/downloads.js";
import {hasSimd, requireWebAssembly} from "../lib/webassembly.js";

const CACHE = "attention-book-training";

async function cachedBlobUrl(url, sha, type) {
  return URL.createObjectURL(new Blob([await cachedBytes(url, sha, {cache: CACHE})], {type}));
}

/* The request {files, base}: fetch TensorFlow.js's files (data-files' "tfjs", under the
 * URL `base`) and start its WebAssembly backend. */
export async function load({files, base}) {
  requireWebAssembly("the panel");
  const lib = files.tfjs;
  const fetchPart = (part, type) => {
    const name = partName(lib, part);
    return cachedBlobUrl(base + name, lib[name].sha256, type);
  };
  await import(await fetchPart("library", "text/javascript"));       // defines tf
  await import(await fetchPart("backend", "text/javascript"));       // adds tf.wasm
  const simd = hasSimd();
  const wasmUrl = await fetchPart(simd ? "wasm-simd" : "wasm", "application/wasm");
  tf.wasm.setWasmPaths({"tfjs-backend-wasm.wasm": wasmUrl, "tfjs-backend-wasm-simd.wasm": wasmUrl,
                        "tfjs-backend-wasm-threaded-simd.wasm": wasmUrl});
  if (!(await tf.setBackend("wasm"))) throw new Error("TensorFlow.js could not start its WebAssembly backend");
  await tf.ready();
  return {backend: tf.getBackend(), simd, version: tf.version_core};
}

/* A batch {size, length, src, tgtIn, tgtOut} as its three int32 tensors. */
export function tensors(batch) {
  const {size, length} = batch;
  return [tf.tensor2d(batch.src, [size, length], "int32"),
          tf.tensor2d(batch.tgtIn, [size, length + 1], "int32"),
          tf.tensor2d(batch.tgtOut, [size, length + 1], "int32")];
}
