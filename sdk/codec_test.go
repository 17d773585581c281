package sdk

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/sdk/abi"
)

// jsonValue generates an arbitrary JSON document, nested a few levels.
func jsonValue(t *prop, depth int) any {
	kinds := 5
	if depth > 0 {
		kinds = 7
	}
	switch t.intRange(0, kinds-1) {
	case 0:
		return nil
	case 1:
		return t.bool()
	case 2:
		return t.float()
	case 3:
		return t.r.Int64() - t.r.Int64()
	case 4:
		return t.string()
	case 5:
		arr := make([]any, t.intRange(0, 4))
		for i := range arr {
			arr[i] = jsonValue(t, depth-1)
		}
		return arr
	default:
		obj := map[string]any{}
		for n := t.intRange(0, 4); n > 0; n-- {
			obj[t.string()] = jsonValue(t, depth-1)
		}
		return obj
	}
}

func rawJSON(t *prop) json.RawMessage {
	b, err := json.Marshal(jsonValue(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// instant is a time between 1970 and about 3058, to the nanosecond.
func instant(t *prop) time.Time {
	return time.Unix(t.int64Range(0, 1<<35), t.int64Range(0, 999_999_999))
}

func observeRequest(t *prop) abi.ObserveRequest {
	offset := t.intRange(-12*60, 14*60)
	req := abi.ObserveRequest{
		Kind:    t.kind(),
		WatchID: t.string(),
		Params:  rawJSON(t),
		Now:     instant(t).In(time.FixedZone("", offset*60)),
		Attempt: t.intRange(-1<<31, 1<<31),
	}
	if t.bool() {
		req.Baseline = rawJSON(t)
	}
	return req
}

// decodeWithEncodingJSON is the reference: encoding/json.
func decodeWithEncodingJSON(b []byte) (abi.ObserveRequest, error) {
	var req abi.ObserveRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errSyntax
	}
	if string(req.Baseline) == "null" {
		req.Baseline = nil
	}
	return req, err
}

func sameRequest(t interface{ Fatalf(string, ...any) }, got, want abi.ObserveRequest) {
	if got.Kind != want.Kind || got.WatchID != want.WatchID || got.Attempt != want.Attempt || !got.Now.Equal(want.Now) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	_, gotOff := got.Now.Zone()
	_, wantOff := want.Now.Zone()
	if gotOff != wantOff {
		t.Fatalf("zone offset %d, want %d", gotOff, wantOff)
	}
	if !bytes.Equal(compact(got.Params), compact(want.Params)) || !bytes.Equal(compact(got.Baseline), compact(want.Baseline)) {
		t.Fatalf("raw values differ: params %s / %s, baseline %s / %s", got.Params, want.Params, got.Baseline, want.Baseline)
	}
}

func compact(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return append([]byte("!invalid:"), b...)
	}
	return out.Bytes()
}

// The hand-written decoder agrees with encoding/json on every request the
// host can send, compact or indented.
func TestDecodeObserveRequestMatchesEncodingJSON(t *testing.T) {
	check(t, func(t *prop) {
		req := observeRequest(t)
		var enc []byte
		var err error
		if t.bool() {
			enc, err = json.MarshalIndent(req, " ", "\t")
		} else {
			enc, err = json.Marshal(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeObserveRequest(enc)
		if err != nil {
			t.Fatalf("decode %s: %v", enc, err)
		}
		want, err := decodeWithEncodingJSON(enc)
		if err != nil {
			t.Fatal(err)
		}
		sameRequest(t, got, want)
	})
}

func TestDecodeObserveRequestRefuses(t *testing.T) {
	good := `{"kind":"timer","watch_id":"w","params":{},"now":"2026-01-01T00:00:00Z","attempt":1}`
	if _, err := decodeObserveRequest([]byte(good)); err != nil {
		t.Fatalf("good request refused: %v", err)
	}
	// A field from a newer host is skipped, not refused.
	newer := `{"kind":"timer","deadline":"2026-01-01T00:00:00Z","hints":{"a":[1]}}`
	if req, err := decodeObserveRequest([]byte(newer)); err != nil || req.Kind != "timer" {
		t.Fatalf("newer host's request: %+v %v", req, err)
	}
	bad := map[string]string{
		"duplicate key":   `{"kind":"a","kind":"b"}`,
		"trailing data":   good + `{}`,
		"not an object":   `[]`,
		"empty":           ``,
		"bad time":        `{"now":"yesterday"}`,
		"escaped time":    `{"now":"2026-01-01T00:00:00\u005a"}`,
		"float attempt":   `{"attempt":1.5}`,
		"string attempt":  `{"attempt":"1"}`,
		"bad params":      `{"params":{"a":}}`,
		"unclosed":        `{"params":[1,2}`,
		"control char":    "{\"kind\":\"a\nb\"}",
		"bad escape":      `{"kind":"\x"}`,
		"invalid utf-8":   "{\"kind\":\"\xff\"}",
		"missing colon":   `{"kind" "a"}`,
		"missing comma":   `{"kind":"a" "watch_id":"b"}`,
		"leading zero":    `{"params":01}`,
		"bare word":       `{"params":nul}`,
		"deep nesting":    `{"params":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
		"number no digit": `{"params":-}`,
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeObserveRequest([]byte(in)); err == nil {
				t.Fatalf("accepted %q", in)
			}
		})
	}
}

func TestStringEscapes(t *testing.T) {
	tests := map[string]string{
		`"plain"`:             "plain",
		`"a\"b\\c\/d"`:        `a"b\c/d`,
		`"\b\f\n\r\t"`:        "\b\f\n\r\t",
		`"\u00e9\u4e2d"`:      "é中",
		`"\ud83d\ude00"`:      "😀",
		`"\ud83d"`:            "\ufffd",
		`"\ud83dx"`:           "\ufffdx",
		`"\ude00"`:            "\ufffd",
		`"\ud83d\u0041"`:      "\ufffdA",
		`"\u0000"`:            "\x00",
		`"mixed \u0041 tail"`: "mixed A tail",
	}
	for in, want := range tests {
		d := decoder{b: []byte(in)}
		got, ok := d.str()
		if !ok || got != want {
			t.Errorf("%s: got %q %v, want %q", in, got, ok, want)
		}
		var ref string
		if err := json.Unmarshal([]byte(in), &ref); err != nil || ref != got {
			t.Errorf("%s: encoding/json says %q (%v), we say %q", in, ref, err, got)
		}
	}
}

func TestAppendObserveResponseRoundTrips(t *testing.T) {
	check(t, func(t *prop) {
		r := abi.ObserveResponse{
			Status: t.oneOf(abi.StatusPending, abi.StatusSettled, abi.StatusChanged),
			Note:   t.string(),
		}
		if t.bool() {
			nc := instant(t).UTC()
			r.NextCheck = &nc
		}
		if t.bool() {
			r.Outcome = &abi.Outcome{Result: t.string(), Summary: t.string()}
			if t.bool() {
				r.Outcome.Detail = rawJSON(t)
			}
		}
		if t.bool() {
			r.Baseline = rawJSON(t)
		}
		out := appendObserveResponse(nil, r)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		var got, want abi.ObserveResponse
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		ref, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		got.Baseline, want.Baseline = compact(got.Baseline), compact(want.Baseline)
		if got.Outcome != nil {
			got.Outcome.Detail, want.Outcome.Detail = compact(got.Outcome.Detail), compact(want.Outcome.Detail)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
	})
}

func TestAppendStringInvalidUTF8(t *testing.T) {
	in := "a\xffb\xc3"
	out := appendString(nil, in)
	var got string
	if err := json.Unmarshal(out, &got); err != nil || got != "a\ufffdb\ufffd" || !utf8.Valid(out) {
		t.Fatalf("%s -> %q %v", out, got, err)
	}
}

// FuzzDecodeObserveRequest: whatever the bytes, the decoder never panics,
// and whatever it accepts encoding/json accepts with the same meaning.
func FuzzDecodeObserveRequest(f *testing.F) {
	f.Add([]byte(`{"kind":"timer","watch_id":"w","params":{"at":"2026-01-01T00:00:00Z"},"now":"2026-01-01T00:00:00Z","attempt":1,"baseline":null}`))
	f.Add([]byte(`{"params":[1,{"a":"\u00e9"},true,null,-0.5e3]}`))
	f.Add([]byte(`{"kind":"a\"b"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := decodeObserveRequest(b)
		if err != nil {
			return
		}
		want, err := decodeWithEncodingJSON(b)
		if err != nil {
			t.Fatalf("we accept what encoding/json refuses (%v): %q", err, b)
		}
		if foldedKey(b) {
			return // encoding/json matches keys case-insensitively; we do not
		}
		sameRequest(t, got, want)
	})
}

// foldedKey reports whether a top-level key names a request field in
// another case ("KIND"), which encoding/json would fill and we skip.
func foldedKey(b []byte) bool {
	known := []string{"kind", "watch_id", "params", "now", "attempt", "baseline"}
	folded := false
	_ = DecodeFields(b, func(k string, _ Value) error {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				folded = true
			}
		}
		return nil
	})
	return folded
}

// FuzzAppendString: every string encodes to valid JSON that decodes to
// what encoding/json makes of it.
func FuzzAppendString(f *testing.F) {
	f.Add("plain")
	f.Add("a\"b\\c\n\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := appendString(nil, s)
		var got, want string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q -> invalid %s", s, out)
		}
		ref, _ := json.Marshal(s)
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q: got %q want %q", s, got, want)
		}
	})
}

func TestDecodeAdmitRequestMatchesEncodingJSON(t *testing.T) {
	check(t, func(t *prop) {
		req := abi.AdmitRequest{
			Kind:   t.kind(),
			Params: rawJSON(t),
			Grants: abi.Grants{
				Capabilities:   t.strings(),
				FetchHosts:     t.strings(),
				Secrets:        t.strings(),
				Programs:       t.strings(),
				ExecMaxTimeout: t.string(),
			},
		}
		enc, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeAdmitRequest(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		var want abi.AdmitRequest
		_ = json.Unmarshal(enc, &want)
		if got.Kind != want.Kind || !bytes.Equal(compact(got.Params), compact(want.Params)) ||
			len(got.Grants.Capabilities) != len(want.Grants.Capabilities) || len(got.Grants.FetchHosts) != len(want.Grants.FetchHosts) ||
			!slices.Equal(got.Grants.Secrets, want.Grants.Secrets) || !slices.Equal(got.Grants.Programs, want.Grants.Programs) ||
			got.Grants.ExecMaxTimeout != want.Grants.ExecMaxTimeout {
			t.Fatalf("got %+v want %+v", got, want)
		}
		for i := range got.Grants.Capabilities {
			if got.Grants.Capabilities[i] != want.Grants.Capabilities[i] {
				t.Fatalf("capability %d", i)
			}
		}
	})
}

func TestAppendAdmitResponseRoundTrips(t *testing.T) {
	check(t, func(t *prop) {
		r := abi.AdmitResponse{
			OK: t.bool(), Code: t.string(), Message: t.string(),
			Field: t.string(), Setting: t.string(), PartitionKey: t.string(),
		}
		if t.bool() {
			d := instant(t).UTC()
			r.Deadline = &d
		}
		if t.bool() {
			n := instant(t).UTC()
			r.NextCheck = &n
		}
		out := appendAdmitResponse(nil, r)
		var got, want abi.AdmitResponse
		if err := abi.StrictUnmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		ref, _ := json.Marshal(r)
		_ = json.Unmarshal(ref, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v want %+v", got, want)
		}
	})
}
