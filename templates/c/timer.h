/*
 * The predicate's logic, apart from the Extism ABI (abi.c), so that it is
 * unit-tested natively (timer_test.c) and compiled unchanged to wasm32.
 *
 * Nothing here allocates or calls a library: the wasm build links with
 * -nostdlib, and the host provides no "env" module (no malloc, no memcpy,
 * no abort). Every buffer is the caller's and every write is bounded.
 */
#ifndef TIMER_H
#define TIMER_H

#include <stddef.h>
#include <stdint.h>

/* KIND is the kind this plugin serves; the host routes calls by it. */
#define KIND "template.timer"

/* out is where a handler writes its answer (or its error message). */
typedef struct {
    char *buf;
    size_t cap;
    size_t len;
    int overflow; /* a write did not fit: the answer is not to be sent */
} out;

/*
 * Each handler reads the call's JSON input and writes JSON to o. It
 * returns 0 for an answer and 1 for an error (o then holds the message,
 * which the host reads as the call's error: a routing bug, input the
 * host would never send).
 */
int timer_describe(out *o);
int timer_admit(const uint8_t *in, size_t n, out *o);
int timer_observe(const uint8_t *in, size_t n, out *o);

/*
 * timer_wake is the optional wake export: it reads an inbound event
 * ({"event", "source", "body"}: a signed forge or Standard Webhooks POST)
 * and answers {"keys": [...]}, the partition keys (exactly as admit
 * answers partition_key) of the watches the event concerns, at most 256,
 * each 1 to 1024 bytes. A timer reads no events, so it answers none; a
 * kind that wakes reads the input here, and answers no keys, never an
 * error, for anything it does not read. A kind that never wakes may drop
 * the export from abi.c: the host then reports that it does not wake.
 */
int timer_wake(const uint8_t *in, size_t n, out *o);

/* An instant: seconds since 1970-01-01T00:00:00Z (negative before it, in
 * the proleptic Gregorian calendar) and nanoseconds within that second. */
typedef struct {
    int64_t sec;
    int32_t nsec;
} instant;

/* parse_rfc3339 reads an RFC 3339 date-time (any offset, a fraction of up
 * to nine digits kept and the rest dropped, as Go's time package does)
 * into UTC. It returns 0, or -1 with *why set to a short reason. */
int parse_rfc3339(const char *s, size_t n, instant *t, const char **why);

/* format_rfc3339 writes t in UTC as the host writes it
 * ("2026-11-30T14:00:00Z", the fraction only when it is not zero and
 * without trailing zeros; seconds only when frac is 0). It returns the
 * bytes written (at most 30), or 0 for a year outside 0000-9999. */
size_t format_rfc3339(instant t, int frac, char *dst);

#endif
