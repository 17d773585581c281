// Runs the unit tests (assembly/timer.test.ts, built to
// build/timer.test.wasm by `make test`) under node and exits non-zero on a
// failure. Only the tests import anything from here: the plugin itself
// imports the Extism kernel alone.
import { readFile } from "node:fs/promises";

const bytes = await readFile(new URL("./build/timer.test.wasm", import.meta.url));
let memory;
const text = (ptr) => {
  if (!ptr) return "";
  const len = new Uint32Array(memory.buffer, ptr - 4, 1)[0];
  return String.fromCharCode(...new Uint16Array(memory.buffer, ptr, len >> 1));
};
const { instance } = await WebAssembly.instantiate(bytes, {
  test: { print: (s) => console.log(text(s)) },
  // The tests' own build keeps AssemblyScript's abort, to say where a
  // failed assertion was; the plugin's build has none (see index.ts).
  env: {
    abort: (msg, file, line, col) => {
      throw new Error(`abort: ${text(msg)} at ${text(file)}:${line}:${col}`);
    },
  },
});
memory = instance.exports.memory;
const failures = instance.exports.run();
console.log(failures === 0 ? "ok" : `${failures} failed`);
process.exit(failures === 0 ? 0 : 1);
