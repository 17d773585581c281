// A timer predicate for vigil in AssemblyScript: params {"at": RFC 3339},
// pending (with the instant as its next check) until the host's now
// reaches it, then settled "fired". Its natural deadline, which admit
// names, is the instant plus a minute: without it the host would give the
// watch its open-ended default and a long timer would expire instead of
// fire.
//
// This file is the predicate's logic and imports nothing, so the unit
// tests (timer.test.ts) run it under node; index.ts is the Extism ABI.
// Time comes from the input's "now" only, never Date.now() (which would
// also import a function the host does not provide), so the plugin is
// deterministic under the host's fake clock.

// KIND is the kind this plugin serves; the host routes calls by it.
export const KIND = "template.timer";

// An answer: the JSON to hand back, or (error) the message of a call the
// host should never have made (a routing bug, input it would never send).
export class Answer {
  constructor(public json: string, public error: bool = false) {}
}

// ---- reading JSON ----

const MAX_DEPTH = 64;
// Strings are kept to this many bytes: longer is no kind, no key and no
// date-time this plugin knows.
const MAX_KEPT = 64;

class Scan {
  i: i32 = 0;
  bad: bool = false; // malformed JSON
  constructor(public s: Uint8Array, public end: i32) {}

  at(): i32 {
    return this.i < this.end ? <i32>this.s[this.i] : -1;
  }

  ws(): void {
    while (this.i < this.end) {
      const c = this.s[this.i];
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) return;
      this.i++;
    }
  }

  hex4(): i32 {
    if (this.end - this.i < 4) return -1;
    let v = 0;
    for (let k = 0; k < 4; k++) {
      const c = <i32>this.s[this.i++];
      let h = -1;
      if (c >= 0x30 && c <= 0x39) h = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) h = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) h = c - 0x41 + 10;
      if (h < 0) return -1;
      v = (v << 4) | h;
    }
    return v;
  }

  // str reads the string at i (its opening quote), escapes decoded, and
  // returns its first MAX_KEPT bytes of UTF-8; long is set when there
  // were more. null on malformed JSON.
  long: bool = false;
  str(): string | null {
    this.long = false;
    if (this.at() != 0x22) return null;
    this.i++;
    const kept = new Uint8Array(MAX_KEPT);
    let n = 0;
    for (;;) {
      if (this.i >= this.end) return null;
      let c = <i32>this.s[this.i++];
      if (c == 0x22) break;
      if (c < 0x20) return null;
      if (c == 0x5c) {
        if (this.i >= this.end) return null;
        const e = <i32>this.s[this.i++];
        if (e == 0x22 || e == 0x5c || e == 0x2f) c = e;
        else if (e == 0x62) c = 8;
        else if (e == 0x66) c = 12;
        else if (e == 0x6e) c = 10;
        else if (e == 0x72) c = 13;
        else if (e == 0x74) c = 9;
        else if (e == 0x75) {
          c = this.hex4();
          if (c < 0) return null;
          if (c >= 0xd800 && c < 0xdc00 && this.end - this.i >= 6 && this.s[this.i] == 0x5c && this.s[this.i + 1] == 0x75) {
            const back = this.i;
            this.i += 2;
            const lo = this.hex4();
            if (lo >= 0xdc00 && lo < 0xe000) c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
            else this.i = back;
          }
          if (c >= 0xd800 && c < 0xe000) c = 0xfffd; // a lone surrogate
        } else return null;
        // The code point, as UTF-8.
        const enc = new Uint8Array(4);
        let en = 1;
        if (c < 0x80) enc[0] = <u8>c;
        else if (c < 0x800) {
          enc[0] = <u8>(0xc0 | (c >> 6));
          enc[1] = <u8>(0x80 | (c & 0x3f));
          en = 2;
        } else if (c < 0x10000) {
          enc[0] = <u8>(0xe0 | (c >> 12));
          enc[1] = <u8>(0x80 | ((c >> 6) & 0x3f));
          enc[2] = <u8>(0x80 | (c & 0x3f));
          en = 3;
        } else {
          enc[0] = <u8>(0xf0 | (c >> 18));
          enc[1] = <u8>(0x80 | ((c >> 12) & 0x3f));
          enc[2] = <u8>(0x80 | ((c >> 6) & 0x3f));
          enc[3] = <u8>(0x80 | (c & 0x3f));
          en = 4;
        }
        for (let k = 0; k < en; k++) {
          if (n < MAX_KEPT) kept[n++] = enc[k];
          else this.long = true;
        }
        continue;
      }
      if (n < MAX_KEPT) kept[n++] = <u8>c;
      else this.long = true;
    }
    return String.UTF8.decode(kept.buffer.slice(0, n));
  }

  lit(w: string): bool {
    for (let k = 0; k < w.length; k++, this.i++) {
      if (this.at() != w.charCodeAt(k)) return false;
    }
    return true;
  }

  // skip moves past one value; false on malformed JSON.
  skip(depth: i32): bool {
    this.ws();
    if (depth > MAX_DEPTH) return false;
    const c = this.at();
    if (c == 0x22) return this.str() != null;
    if (c == 0x7b) {
      this.i++;
      let first = true;
      for (;;) {
        const r = this.member(first);
        if (r == 0) return true;
        if (r < 0 || !this.skip(depth + 1)) return false;
        first = false;
      }
    }
    if (c == 0x5b) {
      this.i++;
      this.ws();
      if (this.at() == 0x5d) {
        this.i++;
        return true;
      }
      for (;;) {
        if (!this.skip(depth + 1)) return false;
        this.ws();
        const d = this.at();
        this.i++;
        if (d == 0x5d) return true;
        if (d != 0x2c) return false;
      }
    }
    if (c == 0x74) return this.lit("true");
    if (c == 0x66) return this.lit("false");
    if (c == 0x6e) return this.lit("null");
    const start = this.i;
    for (;;) {
      const d = this.at();
      if (!((d >= 0x30 && d <= 0x39) || d == 0x2d || d == 0x2b || d == 0x2e || d == 0x65 || d == 0x45)) break;
      this.i++;
    }
    return this.i > start;
  }

  // member moves to the next member of the object it is in: 1 with the
  // key in this.key (and i at the value), 0 at the object's end, -1 on
  // malformed JSON.
  key: string = "";
  member(first: bool): i32 {
    this.ws();
    const c = this.at();
    if (c == 0x7d) {
      this.i++;
      return 0;
    }
    if (!first) {
      if (c != 0x2c) return -1;
      this.i++;
      this.ws();
    }
    const k = this.str();
    if (k == null) return -1;
    this.key = this.long ? "" : k;
    this.ws();
    if (this.at() != 0x3a) return -1;
    this.i++;
    this.ws();
    return 1;
  }
}

// Envelope is what admit and observe read of their input; fields a newer
// host adds are skipped.
class Envelope {
  kind: string | null = null;
  now: string | null = null;
  paramsStart: i32 = -1;
  paramsEnd: i32 = -1;
}

function readEnvelope(s: Uint8Array): Envelope | null {
  const p = new Scan(s, s.length);
  const e = new Envelope();
  p.ws();
  if (p.at() != 0x7b) return null;
  p.i++;
  let first = true;
  for (;;) {
    const r = p.member(first);
    if (r < 0) return null;
    if (r == 0) break;
    first = false;
    if (p.key == "kind") {
      e.kind = p.str();
      if (e.kind == null) return null;
      if (p.long) e.kind = "";
    } else if (p.key == "now") {
      e.now = p.str();
      if (e.now == null) return null;
    } else if (p.key == "params") {
      e.paramsStart = p.i;
      if (!p.skip(1)) return null;
      e.paramsEnd = p.i;
    } else if (!p.skip(1)) {
      return null;
    }
  }
  p.ws();
  return p.i == s.length ? e : null;
}

function wrongKind(e: Envelope): Answer | null {
  const k = e.kind;
  if (k != null && k == KIND) return null;
  return new Answer("call for kind " + quote(k == null ? "" : k) + " reached the " + KIND + " plugin (a routing bug)", true);
}

// Refusal says which field of the params is at fault, and why.
class Refusal {
  constructor(public field: string, public why: string) {}
}

// readParams decodes the params strictly: an object with "at", a string
// holding an RFC 3339 date-time, and nothing else. It returns the instant
// or the refusal.
function readParams(s: Uint8Array, e: Envelope, into: Instant): Refusal | null {
  if (e.paramsStart < 0) return new Refusal("", "params: want an object {\"at\": an RFC 3339 date-time}");
  const p = new Scan(s, e.paramsEnd);
  p.i = e.paramsStart;
  p.ws();
  if (p.at() != 0x7b) return new Refusal("", "params: want an object {\"at\": an RFC 3339 date-time}");
  p.i++;
  let first = true;
  let hasAt = false;
  for (;;) {
    const r = p.member(first);
    if (r < 0) return new Refusal("", "malformed JSON");
    if (r == 0) break;
    first = false;
    if (p.key != "at") {
      if (p.key == "") return new Refusal("", "an unknown field (its name is longer than 64 bytes)");
      return new Refusal(p.key, "unknown field");
    }
    if (p.at() != 0x22) return new Refusal("at", "want a string, an RFC 3339 date-time");
    const v = p.str();
    if (v == null) return new Refusal("at", "malformed JSON");
    if (p.long) return new Refusal("at", "not an RFC 3339 date-time (2026-11-30T14:00:00Z)");
    const why = parseRFC3339(v, into);
    if (why != null) return new Refusal("at", why);
    hasAt = true;
  }
  if (!hasAt) return new Refusal("at", "required");
  return null;
}

// ---- time ----

// Instant: seconds since 1970-01-01T00:00:00Z (negative before it, in the
// proleptic Gregorian calendar) and nanoseconds within that second.
export class Instant {
  sec: i64 = 0;
  nsec: i32 = 0;
  before(b: Instant): bool {
    return this.sec < b.sec || (this.sec == b.sec && this.nsec < b.nsec);
  }
}

// daysFromCivil and civilFromDays are Howard Hinnant's algorithms (days
// since 1970-01-01).
function daysFromCivil(y: i64, m: i32, d: i32): i64 {
  if (m <= 2) y -= 1;
  const era: i64 = (y >= 0 ? y : y - 399) / 400;
  const yoe = <i32>(y - era * 400);
  const doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + <i64>doe - 719468;
}

function digits(s: string, from: i32, n: i32): i32 {
  let v = 0;
  for (let k = 0; k < n; k++) {
    const c = s.charCodeAt(from + k);
    if (c < 0x30 || c > 0x39) return -1;
    v = v * 10 + (c - 0x30);
  }
  return v;
}

// parseRFC3339 reads an RFC 3339 date-time (any offset; a fraction of up
// to nine digits kept and the rest dropped, as Go's time package does)
// into t, in UTC. It returns null, or why it is not one.
export function parseRFC3339(s: string, t: Instant): string | null {
  const bad = "not an RFC 3339 date-time (2026-11-30T14:00:00Z)";
  const n = s.length;
  if (n < 20) return bad;
  const y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  const h = digits(s, 11, 2), mi = digits(s, 14, 2), se = digits(s, 17, 2);
  const sep = s.charCodeAt(10);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || se < 0 || s.charCodeAt(4) != 0x2d || s.charCodeAt(7) != 0x2d ||
    (sep != 0x54 && sep != 0x74) || s.charCodeAt(13) != 0x3a || s.charCodeAt(16) != 0x3a) return bad;
  let i = 19;
  let ns = 0;
  if (s.charCodeAt(i) == 0x2e) {
    let k = 0;
    for (i++; i < n && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39; i++, k++) {
      if (k < 9) ns = ns * 10 + (s.charCodeAt(i) - 0x30);
    }
    if (k == 0) return bad;
    for (; k < 9; k++) ns *= 10;
  }
  let off = 0;
  const z = i < n ? s.charCodeAt(i) : 0;
  if (z == 0x5a || z == 0x7a) {
    i++;
  } else if (z == 0x2b || z == 0x2d) {
    if (n - i < 6) return bad;
    const oh = digits(s, i + 1, 2), om = digits(s, i + 4, 2);
    if (oh < 0 || om < 0 || s.charCodeAt(i + 3) != 0x3a) return bad;
    if (oh > 23 || om > 59) return "the offset from UTC is out of range";
    off = oh * 3600 + om * 60;
    if (z == 0x2d) off = -off;
    i += 6;
  } else {
    return bad;
  }
  if (i != n) return bad;
  const leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  const mdays: i32[] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap ? 1 : 0) || h > 23 || mi > 59) {
    return "a date or time of day that does not exist";
  }
  if (se > 59) return "a leap second, which the host's clock never names";
  t.sec = daysFromCivil(y, mo, d) * 86400 + <i64>(h * 3600 + mi * 60 + se - off);
  t.nsec = ns;
  return null;
}

function pad(v: i64, n: i32): string {
  let s = v.toString();
  while (s.length < n) s = "0" + s;
  return s;
}

// formatRFC3339 writes t in UTC as the host writes it
// ("2026-11-30T14:00:00Z", a fraction only when frac and not zero,
// without trailing zeros), or "" for a year outside 0000-9999.
export function formatRFC3339(t: Instant, frac: bool): string {
  let days: i64 = t.sec >= 0 ? t.sec / 86400 : -((-t.sec + 86399) / 86400);
  const sod = t.sec - days * 86400;
  days += 719468;
  const era: i64 = (days >= 0 ? days : days - 146096) / 146097;
  const doe = <i32>(days - era * 146097);
  const yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const mp = (5 * doy + 2) / 153;
  const d = doy - (153 * mp + 2) / 5 + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y: i64 = <i64>yoe + era * 400 + (m <= 2 ? 1 : 0);
  if (y < 0 || y > 9999) return "";
  let out = pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(sod / 3600, 2) + ":" + pad((sod / 60) % 60, 2) + ":" + pad(sod % 60, 2);
  if (frac && t.nsec != 0) {
    let f = pad(t.nsec, 9);
    while (f.endsWith("0")) f = f.substring(0, f.length - 1);
    out += "." + f;
  }
  return out + "Z";
}

// quote writes s as a JSON string.
export function quote(s: string): string {
  let out = "\"";
  for (let k = 0; k < s.length; k++) {
    const c = s.charCodeAt(k);
    if (c == 0x22 || c == 0x5c) out += "\\" + String.fromCharCode(c);
    else if (c < 0x20 || c == 0x7f) out += "\\u00" + (c < 16 ? "0" : "") + c.toString(16);
    else out += String.fromCharCode(c);
  }
  return out + "\"";
}

// ---- the three exports ----

const SCHEMA =
  '{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",' +
  '"properties":{"at":{"type":"string","format":"date-time","description":"the instant to fire at, RFC 3339"}},' +
  '"required":["at"],"additionalProperties":false}';

export function describe(): Answer {
  return new Answer(
    '{"abi":"vigil.predicate/v1","kind":"' + KIND + '","version":"1.0.0",' +
      '"summary":"fires once the host\'s clock reaches an instant","standing":false,"default_every":"1m0s",' +
      '"params_schema":' + SCHEMA + ',"capabilities":[],"example":{"at":"2030-01-01T14:00:00Z"}}',
  );
}

// The first and last instants a timer may name: RFC 3339 writes the years
// 0000-9999, and the deadline, a minute after the instant, must fit too.
function firstAt(): Instant {
  const t = new Instant();
  t.sec = daysFromCivil(0, 1, 1) * 86400;
  return t;
}

function lastAt(): Instant {
  const t = new Instant();
  t.sec = daysFromCivil(9999, 12, 31) * 86400 + 23 * 3600 + 58 * 60 + 59;
  t.nsec = 999999999;
  return t;
}

function refuse(r: Refusal): Answer {
  const msg = r.field.length > 0 ? r.field + ": " + r.why : r.why;
  return new Answer('{"ok":false,"code":"invalid_params","field":' + quote(r.field) + ',"message":' + quote(msg) + "}");
}

export function admit(input: Uint8Array): Answer {
  const e = readEnvelope(input);
  if (e == null) return new Answer("admit input: malformed JSON", true);
  const wrong = wrongKind(e);
  if (wrong != null) return wrong;
  const at = new Instant();
  const r = readParams(input, e, at);
  if (r != null) return refuse(r);
  if (at.before(firstAt())) {
    return refuse(new Refusal("at", "before 0000-01-01T00:00:00Z, the first instant RFC 3339 can write"));
  }
  if (lastAt().before(at)) {
    return refuse(new Refusal("at", "beyond 9999-12-31T23:58:59Z, the last instant a timer can name " +
      "(its deadline, a minute on, must fit the years 0000-9999 of RFC 3339)"));
  }
  const deadline = new Instant();
  deadline.sec = at.sec + 60;
  deadline.nsec = at.nsec;
  // The first check: the host arms the watch at the instant instead of
  // probing it at registration. Not before the Unix epoch, which the host
  // refuses (such a timer is long past, and probed at once without one).
  const first = at.sec >= 0 ? ',"next_check":' + quote(formatRFC3339(at, true)) : "";
  return new Answer('{"ok":true,"deadline":' + quote(formatRFC3339(deadline, true)) + first + "}");
}

// wake is the optional wake export: it reads an inbound event ({"event",
// "source", "body"}: a signed forge or Standard Webhooks POST) and answers
// {"keys": [...]}, the partition keys (exactly as admit answers
// partition_key) of the watches the event concerns, at most 256, each 1
// to 1024 bytes. A timer reads no events, so it answers none; a kind that
// wakes reads the input here, and answers no keys, never an error, for
// anything it does not read. A kind that never wakes may drop the export
// from index.ts: the host then reports that it does not wake.
export function wake(input: Uint8Array): Answer {
  return new Answer('{"keys":[]}');
}

export function observe(input: Uint8Array): Answer {
  const e = readEnvelope(input);
  if (e == null) return new Answer("observe input: malformed JSON", true);
  const wrong = wrongKind(e);
  if (wrong != null) return wrong;
  const now = new Instant();
  const nowText = e.now;
  if (nowText == null) return new Answer("observe input: now: absent", true);
  const why = parseRFC3339(nowText, now);
  if (why != null) return new Answer("observe input: now: " + why, true);
  const at = new Instant();
  const r = readParams(input, e, at);
  if (r != null) return new Answer("params the host admitted do not decode: " + r.why, true);
  const exact = formatRFC3339(at, true);
  if (exact == "") return new Answer("params the host admitted name an instant outside the years 0000-9999", true);
  if (now.before(at)) {
    // Probed once more at the instant, not every interval.
    return new Answer('{"status":"pending","note":"not yet","next_check":' + quote(exact) + "}");
  }
  const s = formatRFC3339(at, false);
  return new Answer('{"status":"settled","outcome":{"result":"fired","summary":"reached ' + s +
    '","detail":{"at":' + quote(s) + "}}}");
}
