// The timer's unit tests (make test): the handlers of timer.ts on the JSON
// the host sends, without the Extism ABI, run under node by run-tests.mjs.
import { admit, Answer, describe, formatRFC3339, Instant, KIND, observe, parseRFC3339, wake } from "./timer";

@external("test", "print")
declare function print(s: string): void;

let failures = 0;

function bytes(s: string): Uint8Array {
  return Uint8Array.wrap(String.UTF8.encode(s));
}

function expect(ok: bool, what: string, input: string, got: Answer): void {
  if (ok) return;
  failures++;
  print("FAIL " + what + "\n  input:  " + input + "\n  answer: " + got.json + (got.error ? " (error)" : ""));
}

function expectAdmit(input: string, want: string): void {
  const a = admit(bytes(input));
  expect(!a.error && a.json == want, want, input, a);
}

function expectObserve(input: string, want: string): void {
  const a = observe(bytes(input));
  expect(!a.error && a.json == want, want, input, a);
}

function expectRefused(params: string, field: string): void {
  const input = '{"kind":"' + KIND + '","params":' + params + ',"grants":{"capabilities":[]}}';
  const a = admit(bytes(input));
  expect(!a.error && a.json.startsWith('{"ok":false,"code":"invalid_params","field":"' + field + '"'),
    "refused with invalid_params naming " + field, input, a);
}

function expectError(f: (b: Uint8Array) => Answer, input: string): void {
  const a = f(bytes(input));
  expect(a.error, "an error", input, a);
}

export function run(): i32 {
  // admit
  expectAdmit('{"kind":"' + KIND + '","params":{"at":"2026-11-30T14:00:00Z"},"grants":{"capabilities":[]}}',
    '{"ok":true,"deadline":"2026-11-30T14:01:00Z","next_check":"2026-11-30T14:00:00Z"}');
  expectAdmit('{"params":{"at":"2026-11-30T15:00:00.5+01:00"},"kind":"' + KIND + '"}',
    '{"ok":true,"deadline":"2026-11-30T14:01:00.5Z","next_check":"2026-11-30T14:00:00.5Z"}');
  expectAdmit('{"kind":"' + KIND + '","params":{"at":"9999-12-31T23:58:00Z"}}',
    '{"ok":true,"deadline":"9999-12-31T23:59:00Z","next_check":"9999-12-31T23:58:00Z"}');
  expectAdmit('{"kind":"' + KIND + '","params":{"\\u0061t":"2026-11-30T14:00:00Z"}}',
    '{"ok":true,"deadline":"2026-11-30T14:01:00Z","next_check":"2026-11-30T14:00:00Z"}');
  // Before the Unix epoch: no first check, which the host would refuse.
  expectAdmit('{"kind":"' + KIND + '","params":{"at":"1969-12-31T23:59:59Z"}}', '{"ok":true,"deadline":"1970-01-01T00:00:59Z"}');
  // wake: no keys, whatever the event.
  for (let i = 0; i < 2; i++) {
    const input = i == 0 ? '{"event":"check_suite","source":"github","body":{"action":"completed"}}' : "not json";
    const a = wake(bytes(input));
    expect(!a.error && a.json == '{"keys":[]}', '{"keys":[]}', input, a);
  }
  expectRefused("{}", "at");
  expectRefused('{"at":"noon"}', "at");
  expectRefused('{"at":5}', "at");
  expectRefused('{"at":"2026-02-29T14:00:00Z"}', "at");
  expectRefused('{"at":"2026-11-30T23:59:60Z"}', "at");
  expectRefused('{"at":"2026-11-30T14:00:00Z","every":1}', "every");
  expectRefused('{"at":"9999-12-31T23:59:00Z"}', "at"); // its deadline is in year 10000
  expectRefused('{"at":"9999-12-31T20:00:00-05:00"}', "at"); // 10000-01-01T01:00:00Z
  expectRefused('{"at":"0000-01-01T00:00:00+01:00"}', "at"); // year -1
  expectRefused("[]", "");
  expectRefused("null", "");
  expectError(admit, '{"kind":"other","params":{"at":"2026-11-30T14:00:00Z"}}');
  expectError(admit, '{"kind":"' + KIND + '","params":{"at":');
  expectError(admit, "not json");
  expectError(admit, '{"kind":"' + KIND + '","params":{"at":"2026-11-30T14:00:00Z"}} {}');
  // nesting past the reader's bound is refused, not recursed into
  expectError(admit, '{"kind":"' + KIND + '","x":' + "[".repeat(100) + "]".repeat(100) + ',"params":{"at":"2026-11-30T14:00:00Z"}}');

  // observe
  expectObserve('{"kind":"' + KIND + '","watch_id":"w","params":{"at":"2026-11-30T14:00:00Z"},"now":"2026-11-30T13:00:00Z","attempt":1}',
    '{"status":"pending","note":"not yet","next_check":"2026-11-30T14:00:00Z"}');
  expectObserve('{"kind":"' + KIND + '","params":{"at":"2026-11-30T14:00:00.000000001Z"},"now":"2026-11-30T14:00:00Z"}',
    '{"status":"pending","note":"not yet","next_check":"2026-11-30T14:00:00.000000001Z"}');
  expectObserve('{"kind":"' + KIND + '","params":{"at":"2026-11-30T15:00:00+01:00"},"now":"2026-11-30T14:00:00Z","future_field":[1,{"x":null}]}',
    '{"status":"settled","outcome":{"result":"fired","summary":"reached 2026-11-30T14:00:00Z","detail":{"at":"2026-11-30T14:00:00Z"}}}');
  expectError(observe, '{"kind":"conformance.wrong-kind","params":{"at":"2026-11-30T14:00:00Z"},"now":"2026-11-30T14:00:00Z"}');
  expectError(observe, '{"kind":"' + KIND + '","params":{"at":"2026-11-30T14:00:00Z"}}');

  // dates either side of the epoch and across leap years round-trip
  const dates = ["0000-01-01T00:00:00Z", "0000-02-29T12:00:00Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00Z",
    "2000-02-29T00:00:00Z", "2100-03-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z"];
  for (let i = 0; i < dates.length; i++) {
    const t = new Instant();
    const why = parseRFC3339(dates[i], t);
    const got = why == null ? formatRFC3339(t, true) : why;
    if (got != dates[i]) {
      failures++;
      print("FAIL round trip " + dates[i] + ": " + got);
    }
  }

  // describe names the kind and its example
  const d = describe();
  expect(!d.error && d.json.includes('"kind":"' + KIND + '"') && d.json.includes('"example":{"at":'),
    "describe names the kind and an example", "", d);
  return failures;
}
