package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// FirstCheck goes out as admit's next_check on an ok answer only; zero is
// none, and one the host would refuse (before the epoch, after the
// natural deadline) is the plugin's bug, answered as an error rather
// than sent.
func TestAdmitCarriesTheFirstCheck(t *testing.T) {
	p := testPlugin(false, nil2)
	deadline := now.Add(time.Hour + time.Minute)
	first := now.Add(time.Hour)
	p.Deadline = func(testParams) time.Time { return deadline }
	p.FirstCheck = func(testParams) time.Time { return first }
	admit := func(name string) (abi.AdmitResponse, error) {
		return NewHarness(p).Admit(abi.AdmitRequest{Kind: "test.kind", Params: json.RawMessage(`{"name":"` + name + `"}`)})
	}
	got, err := admit("ok")
	if err != nil || !got.OK || got.NextCheck == nil || !got.NextCheck.Equal(first) {
		t.Fatalf("%+v %v", got, err)
	}
	if got, _ := admit("bad"); got.NextCheck != nil {
		t.Fatalf("a refusal with a next check: %+v", got)
	}
	for _, tt := range []struct {
		name string
		at   time.Time
		says string
	}{
		{"zero is at once", time.Time{}, ""},
		{"at the deadline", deadline, ""},
		{"at the epoch", time.Unix(0, 0), ""},
		{"in the past", now.Add(-time.Hour), ""},
		{"after the deadline", deadline.Add(time.Nanosecond), "after the natural deadline"},
		{"before the epoch", time.Unix(0, -1), "before the Unix epoch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first = tt.at
			got, err := admit("ok")
			switch {
			case tt.says != "":
				if err == nil || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("answered %+v, %v; want an error saying %q", got, err, tt.says)
				}
			case err != nil:
				t.Fatal(err)
			case tt.at.IsZero() && got.NextCheck != nil:
				t.Fatalf("zero sent as %s", got.NextCheck)
			case !tt.at.IsZero() && (got.NextCheck == nil || !got.NextCheck.Equal(tt.at)):
				t.Fatalf("next check %v, want %s", got.NextCheck, tt.at)
			}
		})
	}
	// Without a natural deadline, only the years RFC 3339 writes bound it.
	p.Deadline = nil
	first = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := admit("ok"); err == nil || !strings.Contains(err.Error(), "year 10000") {
		t.Fatalf("a first check in year 10000: %v", err)
	}
	// A panic in FirstCheck is the plugin's bug, not the params' fault.
	p.FirstCheck = func(testParams) time.Time { panic("boom") }
	var pe *PanicError
	if _, err := admit("ok"); !errors.As(err, &pe) {
		t.Fatalf("a panicking FirstCheck: %v", err)
	}
}

func wakePlugin(wake func(Event) ([]string, error)) *Harness {
	p := testPlugin(false, nil2)
	p.Wake = wake
	return NewHarness(p)
}

// Wake's keys go out as the author answered them, repeats dropped; an
// event the plugin does not read is no keys.
func TestWakeAnswersKeys(t *testing.T) {
	var got Event
	h := wakePlugin(func(e Event) ([]string, error) {
		got = e
		var body struct {
			SHA string `json:"sha"`
		}
		if e.Name != "status" || !e.DecodeBody(&body) || body.SHA == "" {
			return nil, nil
		}
		return []string{"commits/" + body.SHA, "other/" + body.SHA, "commits/" + body.SHA}, nil
	})
	resp, err := h.Wake(abi.WakeRequest{Event: "status", Source: abi.SourceGitea, Body: json.RawMessage(`{"sha":"abc","extra":[1]}`)})
	if err != nil || !slices.Equal(resp.Keys, []string{"commits/abc", "other/abc"}) {
		t.Fatalf("%+v %v", resp, err)
	}
	if got.Name != "status" || got.Source != abi.SourceGitea || string(got.Body) != `{"sha":"abc","extra":[1]}` {
		t.Fatalf("the plugin saw %+v", got)
	}
	resp, err = h.Wake(abi.WakeRequest{Event: "push", Source: abi.SourceGitHub, Body: json.RawMessage(`{}`)})
	if err != nil || resp.Keys == nil || len(resp.Keys) != 0 {
		t.Fatalf("an event the plugin does not read: %+v %v (want keys [])", resp, err)
	}
}

// Input the SDK cannot read concerns no watch: no keys, never an error,
// and the author's Wake is not called with it.
func TestWakeJunkInputIsNoKeys(t *testing.T) {
	calls := 0
	p := testPlugin(false, nil2)
	p.Wake = func(Event) ([]string, error) { calls++; return []string{"k"}, nil }
	h := newHandler(p)
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, in := range []string{"", "not json {", `[]`, `"body"`, `{"event":1}`, `{"body":` + deep + `}`, `{"event":"a"} trailing`, `{"body":{"a":}}`} {
		out, err := h.wake([]byte(in))
		if err != nil || string(out) != `{"keys":[]}` {
			t.Errorf("%.40q: %s %v, want no keys", in, out, err)
		}
	}
	if calls != 0 {
		t.Fatalf("Wake was called %d times with input the SDK could not read", calls)
	}
	// A body of any JSON type reaches the author, who reads what it knows.
	for _, body := range []string{`null`, `"text"`, `42`, `[1,2]`, `{}`} {
		out, err := h.wake([]byte(`{"event":"e","source":"standard","body":` + body + `}`))
		if err != nil || string(out) != `{"keys":["k"]}` {
			t.Errorf("body %s: %s %v", body, out, err)
		}
	}
}

// Keys off the contract, an error or a panic are the plugin's fault: an
// error the host counts and wakes nothing on, never keys sent.
func TestWakeHoldsItsKeysToTheContract(t *testing.T) {
	many := make([]string, abi.MaxWakeKeys+1)
	for i := range many {
		many[i] = fmt.Sprintf("k%d", i)
	}
	for _, tt := range []struct {
		name string
		keys []string
		err  error
		says string
	}{
		{"at the bounds", append(many[:abi.MaxWakeKeys-1:abi.MaxWakeKeys-1], strings.Repeat("k", abi.MaxPartitionKey)), nil, "keys"},
		{"too many", many, nil, "at most 256"},
		{"too long", []string{strings.Repeat("k", abi.MaxPartitionKey+1)}, nil, "at most 1024"},
		{"empty", []string{"a", ""}, nil, "empty"},
		{"an error", nil, errors.New("no"), "no"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := wakePlugin(func(Event) ([]string, error) { return tt.keys, tt.err })
			resp, err := h.Wake(abi.WakeRequest{Event: "e", Source: abi.SourceStandard, Body: json.RawMessage(`{}`)})
			if tt.name == "at the bounds" {
				if err != nil || len(resp.Keys) != abi.MaxWakeKeys {
					t.Fatalf("%d keys, %v; want %d", len(resp.Keys), err, abi.MaxWakeKeys)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("answered %+v, %v; want an error saying %q", resp, err, tt.says)
			}
		})
	}
	h := wakePlugin(func(Event) ([]string, error) { panic("boom") })
	var pe *PanicError
	if _, err := h.Wake(abi.WakeRequest{Event: "e", Source: abi.SourceGitHub, Body: json.RawMessage(`{}`)}); !errors.As(err, &pe) {
		t.Fatalf("a panicking Wake: %v", err)
	}
	// A plugin without Wake answers an error: a host that called it
	// misread its exports.
	if _, err := NewHarness(testPlugin(false, nil2)).Wake(abi.WakeRequest{}); err == nil {
		t.Fatal("a plugin without Wake answered")
	}
}

func TestDecodeWakeRequestMatchesEncodingJSON(t *testing.T) {
	check(t, func(t *prop) {
		want := abi.WakeRequest{Event: t.string(), Source: t.oneOf(abi.KnownSources()...)}
		if t.bool() {
			b, _ := json.Marshal(map[string]any{"a": t.string(), "n": t.float(), "l": t.strings()})
			want.Body = b
		}
		in, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeWakeRequest(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got.Event != want.Event || got.Source != want.Source || string(got.Body) != string(want.Body) {
			t.Fatalf("%s: decoded %+v, want %+v", in, got, want)
		}
	})
}

func TestAppendWakeResponseRoundTrips(t *testing.T) {
	check(t, func(t *prop) {
		keys := t.strings()
		var got abi.WakeResponse
		out := appendWakeResponse(nil, keys)
		if err := abi.StrictUnmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		var want abi.WakeResponse
		ref, _ := json.Marshal(abi.WakeResponse{Keys: keys})
		_ = json.Unmarshal(ref, &want)
		if want.Keys == nil {
			want.Keys = []string{}
		}
		if !reflect.DeepEqual(got.Keys, want.Keys) {
			t.Fatalf("got %q want %q", got.Keys, want.Keys)
		}
	})
}

// FuzzWake: whatever the input, the SDK's wake answers no keys or the
// author's keys, never an error of its own and never a panic.
func FuzzWake(f *testing.F) {
	f.Add([]byte(`{"event":"check_suite","source":"github","body":{"sha":"abc"}}`))
	f.Add([]byte(`{"body":[[[[]]]]}`))
	f.Add([]byte(``))
	p := testPlugin(false, nil2)
	p.Wake = func(e Event) ([]string, error) {
		var body struct {
			SHA string `json:"sha"`
		}
		if !e.DecodeBody(&body) || body.SHA == "" || len(body.SHA) > abi.MaxPartitionKey {
			return nil, nil
		}
		return []string{body.SHA}, nil
	}
	h := newHandler(p)
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := h.wake(b)
		if err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		var resp abi.WakeResponse
		if err := abi.StrictUnmarshal(out, &resp); err != nil || resp.Keys == nil {
			t.Fatalf("%q answered %s (%v)", b, out, err)
		}
	})
}

type bodyExtra struct {
	Extra string `json:"extra"`
}

type bodyOf struct {
	Action string `json:"action"`
	Repo   struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Number  int      `json:"number"`
	Keys    []string `json:"keys"`
	Ignored string   `json:"-"`
	Plain   string
	bodyExtra
}

// DecodeBody, scanning once and decoding only the members the struct
// names, decodes what encoding/json decodes, keys matched without regard
// to case as encoding/json matches them.
func TestDecodeBodyMatchesEncodingJSON(t *testing.T) {
	members := []string{"action", "ACTION", "repository", "number", "keys", "Plain", "plain", "extra", "other", "Ignored", "-", "bodyExtra"}
	values := func(t *prop) string {
		switch t.r.IntN(6) {
		case 0:
			b, _ := json.Marshal(t.string())
			return string(b)
		case 1:
			return fmt.Sprint(t.intRange(-5, 5000))
		case 2:
			b, _ := json.Marshal(map[string]any{"full_name": t.string(), "n": t.float()})
			return string(b)
		case 3:
			b, _ := json.Marshal(t.strings())
			return string(b)
		case 4:
			return "null"
		}
		return `{"a":[1,{"b":true}],"c":"\u00e9"}`
	}
	check(t, func(t *prop) {
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range t.r.Perm(len(members))[:t.intRange(0, len(members))] {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(members[k])
			b.Write(kb)
			b.WriteByte(':')
			b.WriteString(values(t))
		}
		b.WriteByte('}')
		body := []byte(b.String())
		var got, want bodyOf
		ok := Event{Body: body}.DecodeBody(&got)
		wantOK := json.Unmarshal(body, &want) == nil
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s: decoded %+v (%v), encoding/json %+v (%v)", body, got, ok, want, wantOK)
		}
	})
	var m map[string]any
	if !(Event{Body: json.RawMessage(`{"a":1}`)}).DecodeBody(&m) || m["a"] != 1.0 {
		t.Fatalf("a map decodes as encoding/json decodes it: %v", m)
	}
	for _, body := range []string{``, `null`, `[1]`, `{"action":1}`, `{"action":"a","action":"b"}`, `{"repository":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`} {
		var v bodyOf
		if (Event{Body: json.RawMessage(body)}).DecodeBody(&v) {
			t.Errorf("%.40s decoded as %+v, want false", body, v)
		}
	}
}
