/*
 * A timer predicate for vigil in freestanding C: params {"at": RFC 3339},
 * pending (with the instant as its next check) until the host's now
 * reaches it, then settled "fired". Its natural deadline, which admit
 * names, is the instant plus a minute: without it the host would give the
 * watch its open-ended default and a long timer would expire instead of
 * fire.
 *
 * Time comes from the input's "now" only, never a clock of the guest's
 * own, so the plugin is deterministic under the host's fake clock.
 *
 * The JSON reader below is small and strict about what it must be (a
 * bounded nesting depth, every string checked) and lenient about the
 * envelope (fields a newer host adds are skipped); the params are the
 * caller's and an unknown field in them is refused.
 */
#include "timer.h"

#include <stdbool.h>

/* ---- writing ---- */

static void put(out *o, const char *s, size_t n) {
    if (o->overflow || n > o->cap - o->len) {
        o->overflow = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        o->buf[o->len + i] = s[i];
    }
    o->len += n;
}

static void puts_(out *o, const char *s) {
    size_t n = 0;
    while (s[n]) {
        n++;
    }
    put(o, s, n);
}

/* put_string writes s as a JSON string. */
static void put_string(out *o, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(o, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(o, e, 6);
        } else {
            put(o, (const char *)&s[i], 1);
        }
    }
    put(o, "\"", 1);
}

/* fail replaces whatever was written with an error message. */
static int fail(out *o, const char *a, const char *b) {
    o->len = 0;
    o->overflow = 0;
    puts_(o, a);
    puts_(o, b);
    return 1;
}

/* ---- reading JSON ---- */

#define MAX_DEPTH 64

typedef struct {
    const uint8_t *s;
    size_t n, i;
} scan;

static void ws(scan *p) {
    while (p->i < p->n) {
        uint8_t c = p->s[p->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            return;
        }
        p->i++;
    }
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(scan *p, uint32_t *v) {
    if (p->n - p->i < 4) return -1;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(p->s[p->i++]);
        if (h < 0) return -1;
        *v = *v << 4 | (uint32_t)h;
    }
    return 0;
}

/* read_string reads the string at p (its opening quote), decoding escapes
 * into dst. *len is the decoded length; when it exceeds cap, dst holds
 * only the first cap bytes. It returns -1 on malformed JSON. dst may be
 * NULL with cap 0, to skip a string. */
static int read_string(scan *p, char *dst, size_t cap, size_t *len) {
    size_t w = 0;
    if (p->i >= p->n || p->s[p->i] != '"') return -1;
    p->i++;
    for (;;) {
        if (p->i >= p->n) return -1;
        uint8_t c = p->s[p->i++];
        uint8_t enc[4];
        size_t en = 1;
        if (c == '"') break;
        if (c < 0x20) return -1;
        enc[0] = c;
        if (c == '\\') {
            if (p->i >= p->n) return -1;
            c = p->s[p->i++];
            switch (c) {
            case '"': case '\\': case '/': enc[0] = c; break;
            case 'b': enc[0] = '\b'; break;
            case 'f': enc[0] = '\f'; break;
            case 'n': enc[0] = '\n'; break;
            case 'r': enc[0] = '\r'; break;
            case 't': enc[0] = '\t'; break;
            case 'u': {
                uint32_t r;
                if (hex4(p, &r) < 0) return -1;
                if (r >= 0xd800 && r < 0xdc00 && p->n - p->i >= 6 &&
                    p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
                    scan q = *p;
                    uint32_t lo;
                    q.i += 2;
                    if (hex4(&q, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
                        r = 0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00);
                        p->i = q.i;
                    }
                }
                if (r >= 0xd800 && r < 0xe000) r = 0xfffd; /* a lone surrogate */
                if (r < 0x80) {
                    enc[0] = (uint8_t)r;
                } else if (r < 0x800) {
                    enc[0] = (uint8_t)(0xc0 | r >> 6);
                    enc[1] = (uint8_t)(0x80 | (r & 0x3f));
                    en = 2;
                } else if (r < 0x10000) {
                    enc[0] = (uint8_t)(0xe0 | r >> 12);
                    enc[1] = (uint8_t)(0x80 | ((r >> 6) & 0x3f));
                    enc[2] = (uint8_t)(0x80 | (r & 0x3f));
                    en = 3;
                } else {
                    enc[0] = (uint8_t)(0xf0 | r >> 18);
                    enc[1] = (uint8_t)(0x80 | ((r >> 12) & 0x3f));
                    enc[2] = (uint8_t)(0x80 | ((r >> 6) & 0x3f));
                    enc[3] = (uint8_t)(0x80 | (r & 0x3f));
                    en = 4;
                }
                break;
            }
            default:
                return -1;
            }
        }
        for (size_t k = 0; k < en; k++, w++) {
            if (w < cap) dst[w] = (char)enc[k];
        }
    }
    *len = w;
    return 0;
}

static int skip_value(scan *p, int depth);

/* next_member moves to the next member of the object p is in: it returns
 * 1 with the key read (and p at the value), 0 at the object's end, -1 on
 * malformed JSON. *first is 1 before the first member. */
static int next_member(scan *p, int *first, char *key, size_t cap, size_t *klen) {
    ws(p);
    if (p->i >= p->n) return -1;
    if (p->s[p->i] == '}') {
        p->i++;
        return 0;
    }
    if (!*first) {
        if (p->s[p->i] != ',') return -1;
        p->i++;
        ws(p);
    }
    *first = 0;
    if (read_string(p, key, cap, klen) < 0) return -1;
    ws(p);
    if (p->i >= p->n || p->s[p->i] != ':') return -1;
    p->i++;
    ws(p);
    return 1;
}

static int skip_literal(scan *p, const char *lit) {
    for (; *lit; lit++, p->i++) {
        if (p->i >= p->n || p->s[p->i] != (uint8_t)*lit) return -1;
    }
    return 0;
}

static int skip_value(scan *p, int depth) {
    size_t len;
    ws(p);
    if (p->i >= p->n || depth > MAX_DEPTH) return -1;
    switch (p->s[p->i]) {
    case '"':
        return read_string(p, 0, 0, &len);
    case '{': {
        int first = 1, r;
        p->i++;
        while ((r = next_member(p, &first, 0, 0, &len)) == 1) {
            if (skip_value(p, depth + 1) < 0) return -1;
        }
        return r;
    }
    case '[': {
        p->i++;
        ws(p);
        if (p->i < p->n && p->s[p->i] == ']') {
            p->i++;
            return 0;
        }
        for (;;) {
            if (skip_value(p, depth + 1) < 0) return -1;
            ws(p);
            if (p->i >= p->n) return -1;
            if (p->s[p->i] == ']') {
                p->i++;
                return 0;
            }
            if (p->s[p->i++] != ',') return -1;
        }
    }
    case 't': return skip_literal(p, "true");
    case 'f': return skip_literal(p, "false");
    case 'n': return skip_literal(p, "null");
    default: {
        size_t start = p->i;
        while (p->i < p->n) {
            uint8_t c = p->s[p->i];
            if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) break;
            p->i++;
        }
        return p->i > start ? 0 : -1;
    }
    }
}

static bool eq(const char *a, size_t an, const char *b) {
    size_t i = 0;
    for (; i < an; i++) {
        if (b[i] != a[i] || b[i] == 0) return false;
    }
    return b[i] == 0;
}

/* A span of the input: a value found by envelope, read later. */
typedef struct {
    size_t start, end;
    bool found;
} span;

/* envelope is what admit and observe read of their input. */
typedef struct {
    char kind[65];
    size_t kind_len;
    span params;
    char now[64];
    size_t now_len;
    bool has_kind, has_now;
} envelope;

/* read_envelope reads the call's input object, skipping what it does not
 * know. It returns -1 on malformed JSON or a field of the wrong type. */
static int read_envelope(const uint8_t *in, size_t n, envelope *e) {
    scan p = {in, n, 0};
    char key[16];
    size_t klen;
    int first = 1, r;
    ws(&p);
    if (p.i >= p.n || p.s[p.i] != '{') return -1;
    p.i++;
    while ((r = next_member(&p, &first, key, sizeof key, &klen)) == 1) {
        if (klen <= sizeof key && eq(key, klen, "kind")) {
            if (read_string(&p, e->kind, sizeof e->kind, &e->kind_len) < 0) return -1;
            e->has_kind = true;
        } else if (klen <= sizeof key && eq(key, klen, "now")) {
            if (read_string(&p, e->now, sizeof e->now, &e->now_len) < 0) return -1;
            e->has_now = true;
        } else if (klen <= sizeof key && eq(key, klen, "params")) {
            e->params.start = p.i;
            if (skip_value(&p, 1) < 0) return -1;
            e->params.end = p.i;
            e->params.found = true;
        } else if (skip_value(&p, 1) < 0) {
            return -1;
        }
    }
    if (r < 0) return -1;
    ws(&p);
    return p.i == p.n ? 0 : -1;
}

/* check_kind fails the call when it is for another kind: a routing bug,
 * which answering would hide for the life of the watch. */
static int check_kind(const envelope *e, out *o) {
    if (e->has_kind && e->kind_len <= 64 && eq(e->kind, e->kind_len, KIND)) return 0;
    o->len = 0;
    puts_(o, "call for kind ");
    put_string(o, e->kind, e->kind_len <= 64 ? e->kind_len : 64);
    puts_(o, " reached the " KIND " plugin (a routing bug)");
    return 1;
}

/* params is what a watch of this kind names. */
typedef struct {
    instant at;
} params;

/* A refusal of params: the field at fault and why. */
typedef struct {
    const char *field;
    size_t field_len;
    const char *why;
    char name[65]; /* an unknown field's name */
} refusal;

/* read_params decodes the params strictly: an object with "at", a string
 * holding an RFC 3339 date-time, and nothing else. */
static int read_params(const uint8_t *in, span sp, params *ps, refusal *rf) {
    scan p = {in, sp.end, sp.start};
    size_t klen;
    int first = 1, r;
    bool has_at = false;
    rf->field = "";
    rf->field_len = 0;
    ws(&p);
    if (!sp.found || p.i >= p.n || p.s[p.i] != '{') {
        rf->why = "params: want an object {\"at\": an RFC 3339 date-time}";
        return -1;
    }
    p.i++;
    while ((r = next_member(&p, &first, rf->name, 64, &klen)) == 1) {
        if (klen == 2 && eq(rf->name, klen, "at")) {
            char at[64];
            size_t n;
            rf->field = "at";
            rf->field_len = 2;
            if (p.i >= p.n || p.s[p.i] != '"') {
                rf->why = "want a string, an RFC 3339 date-time";
                return -1;
            }
            if (read_string(&p, at, sizeof at, &n) < 0) {
                rf->why = "malformed JSON";
                return -1;
            }
            if (n > sizeof at || parse_rfc3339(at, n, &ps->at, &rf->why) < 0) {
                if (n > sizeof at) rf->why = "not an RFC 3339 date-time";
                return -1;
            }
            has_at = true;
            continue;
        }
        if (klen > 64) {
            rf->why = "an unknown field (its name is longer than 64 bytes)";
            return -1;
        }
        rf->field = rf->name;
        rf->field_len = klen;
        rf->why = "unknown field";
        return -1;
    }
    if (r < 0) {
        rf->field = "";
        rf->field_len = 0;
        rf->why = "malformed JSON";
        return -1;
    }
    if (!has_at) {
        rf->field = "at";
        rf->field_len = 2;
        rf->why = "required";
        return -1;
    }
    return 0;
}

/* ---- time ---- */

/* days_from_civil and civil_from_days are Howard Hinnant's algorithms
 * (days since 1970-01-01 in the proleptic Gregorian calendar). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int digits(const char *s, int n, int *v) {
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        *v = *v * 10 + (s[i] - '0');
    }
    return 0;
}

int parse_rfc3339(const char *s, size_t n, instant *t, const char **why) {
    int y, mo, d, h, mi, se, oh = 0, om = 0;
    size_t i = 19;
    int32_t ns = 0;
    *why = "not an RFC 3339 date-time (2026-11-30T14:00:00Z)";
    if (n < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) || s[7] != '-' ||
        digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') || digits(s + 11, 2, &h) ||
        s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' || digits(s + 17, 2, &se)) {
        return -1;
    }
    if (s[i] == '.') {
        int k = 0;
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++, k++) {
            if (k < 9) ns = ns * 10 + (s[i] - '0');
        }
        if (k == 0) return -1;
        for (; k < 9; k++) ns *= 10;
    }
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        if (n - i < 6 || digits(s + i + 1, 2, &oh) || s[i + 3] != ':' || digits(s + i + 4, 2, &om)) return -1;
        if (oh > 23 || om > 59) {
            *why = "the offset from UTC is out of range";
            return -1;
        }
        if (s[i] == '-') {
            oh = -oh;
            om = -om;
        }
        i += 6;
    } else {
        return -1;
    }
    if (i != n) return -1;
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59) {
        *why = "a date or time of day that does not exist";
        return -1;
    }
    if (se > 59) {
        *why = "a leap second, which the host's clock never names";
        return -1;
    }
    t->sec = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se -
             (oh * 3600 + om * 60);
    t->nsec = ns;
    return 0;
}

static void put_digits(char *dst, int64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) {
        dst[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

size_t format_rfc3339(instant t, int frac, char *dst) {
    int64_t days = t.sec >= 0 ? t.sec / 86400 : -((-t.sec + 86399) / 86400);
    int64_t sod = t.sec - days * 86400, y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) return 0;
    put_digits(dst, y, 4);
    dst[4] = '-';
    put_digits(dst + 5, m, 2);
    dst[7] = '-';
    put_digits(dst + 8, d, 2);
    dst[10] = 'T';
    put_digits(dst + 11, sod / 3600, 2);
    dst[13] = ':';
    put_digits(dst + 14, sod / 60 % 60, 2);
    dst[16] = ':';
    put_digits(dst + 17, sod % 60, 2);
    size_t n = 19;
    if (frac && t.nsec != 0) {
        int32_t ns = t.nsec;
        int k = 9;
        while (ns % 10 == 0) {
            ns /= 10;
            k--;
        }
        dst[n++] = '.';
        put_digits(dst + n, ns, k);
        n += (size_t)k;
    }
    dst[n++] = 'Z';
    return n;
}

static bool before(instant a, instant b) {
    return a.sec < b.sec || (a.sec == b.sec && a.nsec < b.nsec);
}

/* ---- the three exports ---- */

static const char schema[] =
    "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
    "\"type\":\"object\","
    "\"properties\":{\"at\":{\"type\":\"string\",\"format\":\"date-time\","
    "\"description\":\"the instant to fire at, RFC 3339\"}},"
    "\"required\":[\"at\"],\"additionalProperties\":false}";

int timer_describe(out *o) {
    o->len = 0;
    puts_(o, "{\"abi\":\"vigil.predicate/v1\",\"kind\":\"" KIND "\",\"version\":\"1.0.0\","
             "\"summary\":\"fires once the host's clock reaches an instant\","
             "\"standing\":false,\"default_every\":\"1m0s\",\"params_schema\":");
    puts_(o, schema);
    puts_(o, ",\"capabilities\":[],\"example\":{\"at\":\"2030-01-01T14:00:00Z\"}}");
    return 0;
}

/* The last instant a timer may name: its deadline, a minute on, is the
 * last that RFC 3339 (and so the contract's JSON) can write. */
static instant last_at(void) {
    instant t = {days_from_civil(9999, 12, 31) * 86400 + 23 * 3600 + 58 * 60 + 59, 999999999};
    return t;
}

int timer_admit(const uint8_t *in, size_t n, out *o) {
    envelope e = {0};
    params ps;
    refusal rf;
    if (read_envelope(in, n, &e) < 0) return fail(o, "admit input: malformed JSON", "");
    if (check_kind(&e, o)) return 1;
    o->len = 0;
    if (read_params(in, e.params, &ps, &rf) == 0) {
        instant first = {days_from_civil(0, 1, 1) * 86400, 0};
        rf.field = "at";
        rf.field_len = 2;
        if (before(ps.at, first)) {
            rf.why = "before 0000-01-01T00:00:00Z, the first instant RFC 3339 can write";
        } else if (before(last_at(), ps.at)) {
            rf.why = "beyond 9999-12-31T23:58:59Z, the last instant a timer can name (its deadline, "
                     "a minute on, must fit the years 0000-9999 of RFC 3339)";
        } else {
            char buf[32];
            instant deadline = {ps.at.sec + 60, ps.at.nsec};
            puts_(o, "{\"ok\":true,\"deadline\":");
            put_string(o, buf, format_rfc3339(deadline, 1, buf));
            if (ps.at.sec >= 0) {
                /* The first check: the host arms the watch at the instant
                 * instead of probing it at registration. Not before the
                 * Unix epoch, which the host refuses (such a timer is long
                 * past, and probed at once without one). */
                puts_(o, ",\"next_check\":");
                put_string(o, buf, format_rfc3339(ps.at, 1, buf));
            }
            puts_(o, "}");
            return 0;
        }
    }
    puts_(o, "{\"ok\":false,\"code\":\"invalid_params\",\"field\":");
    put_string(o, rf.field, rf.field_len);
    puts_(o, ",\"message\":");
    if (rf.field_len > 0) {
        char msg[160];
        size_t k = 0;
        for (size_t i = 0; i < rf.field_len; i++) msg[k++] = rf.field[i];
        msg[k++] = ':';
        msg[k++] = ' ';
        for (const char *w = rf.why; *w && k < sizeof msg; w++) msg[k++] = *w;
        put_string(o, msg, k);
    } else {
        size_t k = 0;
        while (rf.why[k]) k++;
        put_string(o, rf.why, k);
    }
    puts_(o, "}");
    return 0;
}

int timer_observe(const uint8_t *in, size_t n, out *o) {
    envelope e = {0};
    params ps;
    refusal rf;
    instant now;
    const char *why;
    char at[32];
    size_t atn;
    if (read_envelope(in, n, &e) < 0) return fail(o, "observe input: malformed JSON", "");
    if (check_kind(&e, o)) return 1;
    why = "absent";
    if (!e.has_now || e.now_len > sizeof e.now || parse_rfc3339(e.now, e.now_len, &now, &why) < 0) {
        return fail(o, "observe input: now: ", why);
    }
    if (read_params(in, e.params, &ps, &rf) < 0) {
        return fail(o, "params the host admitted do not decode: ", rf.why);
    }
    if (format_rfc3339(ps.at, 1, at) == 0) {
        return fail(o, "params the host admitted name an instant outside the years 0000-9999", "");
    }
    o->len = 0;
    if (before(now, ps.at)) {
        /* Probed once more at the instant, not every interval. */
        atn = format_rfc3339(ps.at, 1, at);
        puts_(o, "{\"status\":\"pending\",\"note\":\"not yet\",\"next_check\":");
        put_string(o, at, atn);
        puts_(o, "}");
        return 0;
    }
    atn = format_rfc3339(ps.at, 0, at);
    puts_(o, "{\"status\":\"settled\",\"outcome\":{\"result\":\"fired\",\"summary\":\"reached ");
    put(o, at, atn);
    puts_(o, "\",\"detail\":{\"at\":");
    put_string(o, at, atn);
    puts_(o, "}}}");
    return 0;
}

int timer_wake(const uint8_t *in, size_t n, out *o) {
    (void)in;
    (void)n;
    o->len = 0;
    puts_(o, "{\"keys\":[]}");
    return 0;
}
