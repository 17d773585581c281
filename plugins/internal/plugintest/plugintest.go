package plugintest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/sdktest"
)

// CheckSchema compiles schema the way the host does (sdktest.CompileSchema:
// draft 2020-12, formats asserted, no outside reference) and checks each
// params document against it: valid when want[doc] is true, refused
// otherwise.
func CheckSchema(tb testing.TB, schema string, want map[string]bool) {
	tb.Helper()
	s, err := sdktest.CompileSchema([]byte(schema))
	if err != nil {
		tb.Fatal(err)
	}
	for doc, ok := range want {
		if err := s.Validate([]byte(doc)); (err == nil) != ok {
			tb.Errorf("%s: valid = %v, want %v (%v)", doc, err == nil, ok, err)
		}
	}
}

// CheckAdmit checks one admit answer as sdktest.CheckAdmit does.
func CheckAdmit(tb testing.TB, got abi.AdmitResponse, field, setting, says string) {
	tb.Helper()
	sdktest.CheckAdmit(tb, got, field, setting, says)
}

// WakeCase is one recorded event of a plugin's testdata/events and a
// watch it is or is not about, as the file wake.json there lists them.
type WakeCase struct {
	// File is the event's body, a recorded payload, under testdata/events.
	File string `json:"file"`
	// Event and Source are the wake input's: the event's name as its
	// forge sends it, and the hook source's scheme.
	Event  string `json:"event"`
	Source string `json:"source"`
	// Watch is a watch's params; Wakes says whether the event names its
	// partition key.
	Watch json.RawMessage `json:"watch"`
	Wakes bool            `json:"wakes"`
	// Why says what the case shows.
	Why string `json:"why"`
}

// ReadWakeCases reads dir/wake.json and each case's recorded body.
func ReadWakeCases(tb testing.TB, dir string) ([]WakeCase, map[string]json.RawMessage) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "wake.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var cases []WakeCase
	if err := abi.StrictUnmarshal(b, &cases); err != nil {
		tb.Fatalf("wake.json: %v", err)
	}
	bodies := map[string]json.RawMessage{}
	for _, c := range cases {
		body, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			tb.Fatal(err)
		}
		if !json.Valid(body) {
			tb.Fatalf("%s is not JSON", c.File)
		}
		bodies[c.File] = body
	}
	return cases, bodies
}

// CheckWake checks each case: the keys wake answers for the recorded
// event hold the partition key admit answers for the case's watch when
// the case says it wakes, and not otherwise. admit and wake are the
// plugin's, natively (sdk.Harness) or built (through the host's runtime).
func CheckWake(tb testing.TB, cases []WakeCase, bodies map[string]json.RawMessage,
	admit func(params json.RawMessage) (string, error), wake func(abi.WakeRequest) ([]string, error)) {
	tb.Helper()
	for _, c := range cases {
		key, err := admit(c.Watch)
		if err != nil || key == "" {
			tb.Errorf("%s: admitting %s: key %q, %v", c.File, c.Watch, key, err)
			continue
		}
		keys, err := wake(abi.WakeRequest{Event: c.Event, Source: c.Source, Body: bodies[c.File]})
		if err != nil {
			tb.Errorf("%s (%s, %s): wake: %v", c.File, c.Event, c.Source, err)
			continue
		}
		if slices.Contains(keys, key) != c.Wakes {
			tb.Errorf("%s (%s, %s): wake answered %q; the watch's key %q is in it: %v, want %v (%s)",
				c.File, c.Event, c.Source, keys, key, !c.Wakes, c.Wakes, c.Why)
		}
	}
}
