// Every download of the page's code (lib/cached_fetch.js), against a fake Cache API and
// a fake network: a second fetch comes from the cache, a new version replaces the old,
// a wrong checksum is refused and not kept.
import {test} from "node:test";
import assert from "node:assert/strict";
import {createHash, webcrypto} from "node:crypto";
import {cachedBytes, sha256} from "../../book/_ext/static/lib/cached_fetch.js";

const hex = (text) => createHash("sha256").update(text).digest("hex");

function fakeCaches() {
  const stores = new Map();
  return {
    stores,
    async open(name) {
      if (!stores.has(name)) stores.set(name, new Map());
      const store = stores.get(name);
      const abs = (k) => new URL(typeof k === "string" ? k : k.url, "http://book.test/page/").href;
      return {
        match: async (k) => (store.has(abs(k)) ? store.get(abs(k)).clone() : undefined),
        put: async (k, r) => { store.set(abs(k), r); },
        delete: async (k) => store.delete(abs(k)),
        keys: async () => Array.from(store.keys(), (url) => ({url})),
      };
    },
  };
}

function env(files) {
  const asked = [];
  return {asked, caches: fakeCaches(), crypto: webcrypto, base: "http://book.test/page/",
          fetch: async (url) => { asked.push(url); return url in files ? new Response(files[url]) : new Response("", {status: 404, statusText: "Not Found"}); }};
}

test("the second fetch of a file comes from the cache", async () => {
  const e = env({"m.bin": "model bytes"});
  let counted = 0;
  const first = await cachedBytes("m.bin", hex("model bytes"), {cache: "c", onBytes: (n) => { counted += n; }}, e);
  const second = await cachedBytes("m.bin", hex("model bytes"), {cache: "c"}, e);
  assert.equal(new TextDecoder().decode(second), "model bytes");
  assert.deepEqual(first, second);
  assert.equal(counted, 11);
  assert.deepEqual(e.asked, ["m.bin"]);
});

test("a new version of a file replaces the old one in the cache", async () => {
  const e = env({"m.bin": "one"});
  await cachedBytes("m.bin", hex("one"), {cache: "c"}, e);
  const files = {"m.bin": "two"};
  e.fetch = async (url) => new Response(files[url]);
  await cachedBytes("m.bin", hex("two"), {cache: "c"}, e);
  const keys = Array.from(e.caches.stores.get("c").keys());
  assert.deepEqual(keys, [`http://book.test/page/m.bin?sha256=${hex("two")}`]);
});

test("a file that does not match its checksum is refused and not cached", async () => {
  const e = env({"m.bin": "changed"});
  await assert.rejects(cachedBytes("m.bin", hex("original"), {cache: "c"}, e), /does not match the page's checksum/);
  assert.equal(e.caches.stores.get("c").size, 0);
  await assert.rejects(cachedBytes("x.bin", "0", {cache: "c"}, e), /x.bin: HTTP 404/);
});

test("without a Cache API or a secure context it still downloads", async () => {
  const e = {...env({"m.bin": "abc"}), caches: undefined, crypto: {}};
  assert.equal(new TextDecoder().decode(await cachedBytes("m.bin", "whatever", {cache: "c"}, e)), "abc");
  assert.equal(await sha256(new TextEncoder().encode("abc"), webcrypto), hex("abc"));
  assert.equal(await sha256(new Uint8Array(1), {}), null);
});
