/*
 * The Extism ABI, as vigil's host provides it, in freestanding C.
 *
 * The host links a plugin against the Extism kernel (module
 * "extism:host/env") and vigil's own functions ("extism:host/user":
 * vigil_fetch, vigil_exec, vigil_extraction_failed; this timer needs
 * none). Nothing else is provided: no "env" module, so no libc, no
 * malloc, no memcpy and no abort. A wasm that imports one is refused
 * when the host loads it. WASI is there, but this plugin needs none of it,
 * and it must never read a WASI clock: time is the input's "now".
 *
 * Each export reads the call's input out of kernel memory into this
 * module's memory, runs its handler (timer.c), and copies the answer
 * back into a kernel block it hands to output_set, or to error_set for
 * an error (the host then sees a non-zero return and the message).
 *
 * Build: see the Makefile (clang --target=wasm32 -nostdlib, linked by
 * wasm-ld with --no-entry: a reactor with no _start, whose exports the
 * host calls directly).
 */
#include "timer.h"

#define KERNEL(name) __attribute__((import_module("extism:host/env"), import_name(name)))
#define EXPORT(name) __attribute__((export_name(name)))

KERNEL("input_length") extern uint64_t input_length(void);
KERNEL("input_load_u64") extern uint64_t input_load_u64(uint64_t offset);
KERNEL("input_load_u8") extern uint32_t input_load_u8(uint64_t offset);
KERNEL("alloc") extern uint64_t kernel_alloc(uint64_t n);
KERNEL("store_u64") extern void store_u64(uint64_t offset, uint64_t v);
KERNEL("store_u8") extern void store_u8(uint64_t offset, uint32_t v);
KERNEL("output_set") extern void output_set(uint64_t offset, uint64_t n);
KERNEL("error_set") extern void error_set(uint64_t offset);

/* The input is copied into a buffer at the end of memory, grown to the
 * largest input seen; larger than this is refused rather than grown
 * without bound (the host's own inputs are a few KiB). */
#define MAX_INPUT (4u << 20)

static uint8_t *inbuf;
static uint32_t incap;

/* An answer is small: describe's is the largest, under 1 KiB. */
static char outbuf[16384];

static int read_input(const uint8_t **in, size_t *n) {
    uint64_t len = input_length();
    if (len > MAX_INPUT) return -1;
    if (len > incap) {
        uint32_t need = (uint32_t)((len + 65535) / 65536); /* pages for the whole input */
        uintptr_t end = (uintptr_t)__builtin_wasm_memory_size(0) * 65536;
        if (inbuf != 0 && (uintptr_t)inbuf + incap == end) {
            /* The buffer ends memory (nothing else here grows it): extend it. */
            if (__builtin_wasm_memory_grow(0, need - incap / 65536) == (size_t)-1) return -1;
        } else {
            size_t old = __builtin_wasm_memory_grow(0, need);
            if (old == (size_t)-1) return -1;
            inbuf = (uint8_t *)(old * 65536);
        }
        incap = need * 65536;
    }
    uint64_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = input_load_u64(i);
        for (int k = 0; k < 8; k++) inbuf[i + k] = (uint8_t)(v >> (8 * k));
    }
    for (; i < len; i++) inbuf[i] = (uint8_t)input_load_u8(i);
    *in = inbuf;
    *n = (size_t)len;
    return 0;
}

/* block copies b into a new kernel block and returns its offset, or 0
 * when the kernel has no memory left. */
static uint64_t block(const char *b, size_t n) {
    uint64_t off = kernel_alloc(n);
    if (off == 0) return 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++) v |= (uint64_t)(uint8_t)b[i + k] << (8 * k);
        store_u64(off + i, v);
    }
    for (; i < n; i++) store_u8(off + i, (uint8_t)b[i]);
    return off;
}

static int32_t answer(int rc, out *o) {
    if (o->overflow) {
        static const char msg[] = "the answer does not fit the plugin's output buffer";
        o->len = 0;
        for (size_t i = 0; i + 1 < sizeof msg; i++) o->buf[o->len++] = msg[i];
        rc = 1;
    }
    uint64_t off = block(o->buf, o->len);
    if (off == 0) return 1;
    if (rc != 0) {
        error_set(off);
        return 1;
    }
    output_set(off, o->len);
    return 0;
}

typedef int (*handler)(const uint8_t *in, size_t n, out *o);

static int32_t call(handler h) {
    out o = {outbuf, sizeof outbuf, 0, 0};
    const uint8_t *in;
    size_t n;
    if (read_input(&in, &n) < 0) {
        static const char msg[] = "input larger than the plugin reads";
        for (size_t i = 0; i + 1 < sizeof msg; i++) o.buf[o.len++] = msg[i];
        return answer(1, &o);
    }
    return answer(h(in, n, &o), &o);
}

EXPORT("describe") int32_t describe(void) {
    out o = {outbuf, sizeof outbuf, 0, 0};
    return answer(timer_describe(&o), &o);
}

EXPORT("admit") int32_t admit(void) { return call(timer_admit); }

EXPORT("observe") int32_t observe(void) { return call(timer_observe); }

/* Optional: see timer_wake in timer.h. */
EXPORT("wake") int32_t wake(void) { return call(timer_wake); }
