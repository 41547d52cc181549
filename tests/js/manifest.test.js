// The page's reader of an export's manifest.json (translator/manifest.js) and its check of
// a reader's own files: one message naming the file for each way a folder can be wrong.
import {test} from "node:test";
import assert from "node:assert/strict";
import {checkedFiles, pageFiles, parseManifest, partFile} from "../../book/_ext/static/translator/manifest.js";

const FORMAT = 2;
const manifest = {format: FORMAT, config: {}, special_ids: {}, decoding: {beam_size: 4}, vocabulary: ["a"],
                  scores: [0], files: {
                    "g1.onnx": {part: "encoder", bytes: 3, sha256: "s1", page: true},
                    "g2.onnx": {part: "decoder", bytes: 2, sha256: "s2", page: true},
                    "w.bin": {part: "weights", bytes: 4, sha256: "s3", page: true},
                    "spm.model": {part: "tokenizer", bytes: 9, sha256: "s4", page: false}}};
const file = (n) => ({arrayBuffer: async () => new ArrayBuffer(n)});
const shaOf = {3: "s1", 2: "s2", 4: "s3"};
const sha = async (bytes) => shaOf[bytes.byteLength];

test("reads the parts and the page's files from the manifest, not from a list of its own", () => {
  const m = parseManifest(JSON.stringify(manifest), FORMAT);
  assert.deepEqual(Object.keys(pageFiles(m)), ["g1.onnx", "g2.onnx", "w.bin"]);
  assert.equal(partFile(m, "weights"), "w.bin");
  assert.throws(() => partFile(m, "nothing"), /lists no nothing file/);
});

test("a manifest that is not JSON, of another format, or lacking a field is named", () => {
  assert.throws(() => parseManifest("{ nope", FORMAT), /manifest.json is not JSON/);
  assert.throws(() => parseManifest(JSON.stringify({...manifest, format: 1}), FORMAT), /has format 1, this page reads format 2/);
  assert.throws(() => parseManifest(JSON.stringify({...manifest, scores: undefined}), FORMAT), /no "scores"/);
});

test("each file is checked for its presence, size and checksum", async () => {
  const all = {"g1.onnx": file(3), "g2.onnx": file(2), "w.bin": file(4)};
  assert.deepEqual(Object.keys(await checkedFiles(manifest, all, sha)), ["g1.onnx", "g2.onnx", "w.bin"]);
  await assert.rejects(checkedFiles(manifest, {...all, "g2.onnx": undefined}, sha), /lacks g2.onnx/);
  await assert.rejects(checkedFiles(manifest, {...all, "w.bin": file(2)}, sha), /w.bin has 2 bytes, manifest.json says 4/);
  await assert.rejects(checkedFiles(manifest, all, async (b) => (b.byteLength === 3 ? "other" : shaOf[b.byteLength])),
                       /g1.onnx does not match manifest.json's checksum/);
  assert.ok(await checkedFiles(manifest, all, async () => null));          // no hashing here
});

test("a refusal names every missing file and says what to do, in full", async () => {
  await assert.rejects(checkedFiles(manifest, {"w.bin": file(4)}, sha), {
    message: "the model folder lacks g1.onnx, g2.onnx: choose every file that " +
             "`python -m transformer export` wrote (or drop the folder)"});
  const all = {"g1.onnx": file(3), "g2.onnx": file(2), "w.bin": file(4)};
  await assert.rejects(checkedFiles(manifest, all, async () => "other"), {
    message: "g1.onnx does not match manifest.json's checksum: the file is damaged or from " +
             "another export"});
});
