/*
 * The timer's unit tests, run natively (make test): the handlers of
 * timer.c on the JSON the host sends, without the Extism ABI.
 */
#include <stdio.h>
#include <string.h>

#include "timer.h"

static int failures;

static char buf[16384];

typedef int (*handler)(const uint8_t *in, size_t n, out *o);

/* call runs h on in and returns its rc; the answer is in buf. */
static int call(handler h, const char *in) {
    out o = {buf, sizeof buf - 1, 0, 0};
    int rc = h((const uint8_t *)in, strlen(in), &o);
    buf[o.len] = 0;
    return rc;
}

static void expect(int ok, const char *what, const char *in) {
    if (!ok) {
        failures++;
        printf("FAIL %s\n  input:  %s\n  answer: %s\n", what, in, buf);
    }
}

static void expect_answer(handler h, const char *in, const char *want) {
    int rc = call(h, in);
    expect(rc == 0 && strcmp(buf, want) == 0, want, in);
}

static void expect_refused(const char *params, const char *field) {
    char in[512], want[64];
    snprintf(in, sizeof in, "{\"kind\":\"" KIND "\",\"params\":%s,\"grants\":{\"capabilities\":[]}}", params);
    snprintf(want, sizeof want, "\"field\":\"%s\"", field);
    int rc = call(timer_admit, in);
    expect(rc == 0 && strstr(buf, "\"ok\":false,\"code\":\"invalid_params\"") && strstr(buf, want),
           "refused with invalid_params naming the field", in);
}

static void expect_error(handler h, const char *in) {
    expect(call(h, in) == 1, "an error", in);
}

int main(void) {
    /* admit */
    expect_answer(timer_admit,
                  "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"},\"grants\":{\"capabilities\":[]}}",
                  "{\"ok\":true,\"deadline\":\"2026-11-30T14:01:00Z\",\"next_check\":\"2026-11-30T14:00:00Z\"}");
    expect_answer(timer_admit, "{\"params\":{\"at\":\"2026-11-30T15:00:00.5+01:00\"},\"kind\":\"" KIND "\"}",
                  "{\"ok\":true,\"deadline\":\"2026-11-30T14:01:00.5Z\",\"next_check\":\"2026-11-30T14:00:00.5Z\"}");
    expect_answer(timer_admit, "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"9999-12-31T23:58:00Z\"}}",
                  "{\"ok\":true,\"deadline\":\"9999-12-31T23:59:00Z\",\"next_check\":\"9999-12-31T23:58:00Z\"}");
    /* before the Unix epoch: no first check, which the host would refuse */
    expect_answer(timer_admit, "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"1969-12-31T23:59:59Z\"}}",
                  "{\"ok\":true,\"deadline\":\"1970-01-01T00:00:59Z\"}");
    expect_refused("{}", "at");
    expect_refused("{\"at\":\"noon\"}", "at");
    expect_refused("{\"at\":5}", "at");
    expect_refused("{\"at\":\"2026-02-29T14:00:00Z\"}", "at");
    expect_refused("{\"at\":\"2026-11-30T23:59:60Z\"}", "at");
    expect_refused("{\"at\":\"2026-11-30T14:00:00Z\",\"every\":1}", "every");
    expect_refused("{\"at\":\"9999-12-31T23:59:00Z\"}", "at");      /* its deadline is in year 10000 */
    expect_refused("{\"at\":\"9999-12-31T20:00:00-05:00\"}", "at"); /* 10000-01-01T01:00:00Z */
    expect_refused("{\"at\":\"0000-01-01T00:00:00+01:00\"}", "at"); /* year -1 */
    expect_refused("[]", "");
    expect_refused("null", "");
    expect_error(timer_admit, "{\"kind\":\"other\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"}}");
    expect_error(timer_admit, "{\"kind\":\"" KIND "\",\"params\":{\"at\":");
    expect_error(timer_admit, "not json");
    expect_error(timer_admit, "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"}} {}");

    /* wake: no keys, whatever the event */
    expect_answer(timer_wake, "{\"event\":\"check_suite\",\"source\":\"github\",\"body\":{\"action\":\"completed\"}}",
                  "{\"keys\":[]}");
    expect_answer(timer_wake, "not json", "{\"keys\":[]}");

    /* observe */
    expect_answer(timer_observe,
                  "{\"kind\":\"" KIND "\",\"watch_id\":\"w\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"},"
                  "\"now\":\"2026-11-30T13:00:00Z\",\"attempt\":1}",
                  "{\"status\":\"pending\",\"note\":\"not yet\",\"next_check\":\"2026-11-30T14:00:00Z\"}");
    expect_answer(timer_observe,
                  "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"2026-11-30T14:00:00.000000001Z\"},"
                  "\"now\":\"2026-11-30T14:00:00Z\"}",
                  "{\"status\":\"pending\",\"note\":\"not yet\",\"next_check\":\"2026-11-30T14:00:00.000000001Z\"}");
    expect_answer(timer_observe,
                  "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"2026-11-30T15:00:00+01:00\"},"
                  "\"now\":\"2026-11-30T14:00:00Z\",\"future_field\":[1,{\"x\":null}]}",
                  "{\"status\":\"settled\",\"outcome\":{\"result\":\"fired\",\"summary\":\"reached "
                  "2026-11-30T14:00:00Z\",\"detail\":{\"at\":\"2026-11-30T14:00:00Z\"}}}");
    expect_error(timer_observe, "{\"kind\":\"conformance.wrong-kind\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"},"
                                "\"now\":\"2026-11-30T14:00:00Z\"}");
    expect_error(timer_observe, "{\"kind\":\"" KIND "\",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"}}");

    /* nesting past the reader's bound is refused, not recursed into */
    {
        static char deep[1024];
        int n = snprintf(deep, sizeof deep, "{\"kind\":\"" KIND "\",\"x\":");
        for (int i = 0; i < 100; i++) deep[n++] = '[';
        for (int i = 0; i < 100; i++) deep[n++] = ']';
        snprintf(deep + n, sizeof deep - (size_t)n, ",\"params\":{\"at\":\"2026-11-30T14:00:00Z\"}}");
        expect_error(timer_admit, deep);
    }

    /* an answer that does not fit is marked, never written past the buffer */
    {
        static char room[4096];
        memset(room, '#', sizeof room);
        out o = {room, 16, 0, 0};
        timer_describe(&o);
        if (!o.overflow || o.len > 16 || room[16] != '#') {
            failures++;
            printf("FAIL describe into 16 bytes: overflow %d, len %zu\n", o.overflow, o.len);
        }
    }

    /* dates either side of the epoch and across leap years round-trip */
    const char *dates[] = {"0000-01-01T00:00:00Z", "0000-02-29T12:00:00Z", "1969-12-31T23:59:59.999Z",
                           "1970-01-01T00:00:00Z", "2000-02-29T00:00:00Z", "2100-03-01T00:00:00Z",
                           "9999-12-31T23:59:59.999999999Z"};
    for (size_t i = 0; i < sizeof dates / sizeof dates[0]; i++) {
        instant t;
        const char *why;
        char got[32] = {0};
        size_t n = parse_rfc3339(dates[i], strlen(dates[i]), &t, &why) == 0 ? format_rfc3339(t, 1, got) : 0;
        got[n] = 0;
        if (strcmp(got, dates[i]) != 0) {
            failures++;
            printf("FAIL round trip %s: %s\n", dates[i], got);
        }
    }

    /* describe names the kind and its example */
    {
        out o = {buf, sizeof buf - 1, 0, 0};
        int rc = timer_describe(&o);
        buf[o.len] = 0;
        expect(rc == 0 && strstr(buf, "\"kind\":\"" KIND "\"") && strstr(buf, "\"example\":{\"at\":"),
               "describe names the kind and an example", "");
    }
    return failures ? (printf("%d failed\n", failures), 1) : (printf("ok\n"), 0);
}
