// The Extism ABI, as vigil's host provides it, in AssemblyScript.
//
// The host links a plugin against the Extism kernel (module
// "extism:host/env") and vigil's own functions ("extism:host/user":
// vigil_fetch, vigil_exec, vigil_extraction_failed; this timer needs
// none). Nothing else is provided, and in particular no "env" module:
//
//   - env.abort, which AssemblyScript imports by default for a failed
//     assertion or an out-of-bounds access, would make the host refuse the
//     module ("module[env] not instantiated"), so the build passes
//     `--use abort=` (see the Makefile): such a failure traps instead, the
//     host discards the instance and reports the call as failed. The code
//     below raises its own errors through error_set.
//   - env.seed (Math.random) and Date.now are not there either: a
//     predicate needs neither, and time is the input's "now".
//
// Each export copies the call's input out of kernel memory, runs its
// handler (timer.ts), and copies the answer, as UTF-8, into a kernel block
// it hands to output_set, or to error_set for an error (the host sees a
// non-zero return and the message).
import { admit as admitJSON, Answer, describe as describeJSON, observe as observeJSON, wake as wakeJSON } from "./timer";

@external("extism:host/env", "input_length")
declare function input_length(): u64;
@external("extism:host/env", "input_load_u64")
declare function input_load_u64(offset: u64): u64;
@external("extism:host/env", "input_load_u8")
declare function input_load_u8(offset: u64): u32;
@external("extism:host/env", "alloc")
declare function kernel_alloc(n: u64): u64;
@external("extism:host/env", "store_u64")
declare function store_u64(offset: u64, v: u64): void;
@external("extism:host/env", "store_u8")
declare function store_u8(offset: u64, v: u32): void;
@external("extism:host/env", "output_set")
declare function output_set(offset: u64, n: u64): void;
@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;

// The host's own inputs are a few KiB; larger than this is refused rather
// than copied.
const MAX_INPUT: u64 = 4 << 20;

function input(): Uint8Array | null {
  const n = input_length();
  if (n > MAX_INPUT) return null;
  const b = new Uint8Array(<i32>n);
  let i: u64 = 0;
  for (; i + 8 <= n; i += 8) store<u64>(b.dataStart + <usize>i, input_load_u64(i));
  for (; i < n; i++) b[<i32>i] = <u8>input_load_u8(i);
  return b;
}

// block copies s, as UTF-8, into a new kernel block: its offset and
// length, or offset 0 when the kernel has no memory left.
function block(s: string): u64[] {
  const b = Uint8Array.wrap(String.UTF8.encode(s));
  const n = <u64>b.length;
  const off = kernel_alloc(n);
  if (off == 0) return [0, 0];
  let i: u64 = 0;
  for (; i + 8 <= n; i += 8) store_u64(off + i, load<u64>(b.dataStart + <usize>i));
  for (; i < n; i++) store_u8(off + i, b[<i32>i]);
  return [off, n];
}

function answer(a: Answer): i32 {
  const blk = block(a.json);
  if (blk[0] == 0) return 1;
  if (a.error) {
    error_set(blk[0]);
    return 1;
  }
  output_set(blk[0], blk[1]);
  return 0;
}

export function describe(): i32 {
  return answer(describeJSON());
}

export function admit(): i32 {
  const in_ = input();
  if (in_ == null) return answer(new Answer("input larger than the plugin reads", true));
  return answer(admitJSON(in_));
}

export function observe(): i32 {
  const in_ = input();
  if (in_ == null) return answer(new Answer("input larger than the plugin reads", true));
  return answer(observeJSON(in_));
}

// Optional: see wake in timer.ts.
export function wake(): i32 {
  const in_ = input();
  if (in_ == null) return answer(new Answer("input larger than the plugin reads", true));
  return answer(wakeJSON(in_));
}
