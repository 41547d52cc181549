/* What a widget checks before it starts anything that needs WebAssembly. */

/* Throws an Error saying that `what` cannot run here without WebAssembly (and Workers). */
export function requireWebAssembly(what, scope = globalThis) {
  if (typeof scope.WebAssembly !== "object") {
    throw new Error(`this browser has no WebAssembly: ${what} cannot run here`);
  }
  if (typeof scope.Worker === "undefined" && typeof scope.WorkerGlobalScope === "undefined") {
    throw new Error(`this browser cannot run a Web Worker: ${what} cannot run here`);
  }
}

/* Whether this browser's WebAssembly has SIMD (a module with one SIMD instruction). */
export function hasSimd() {
  return WebAssembly.validate(new Uint8Array([
    0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0,
    253, 15, 253, 98, 11]));
}
