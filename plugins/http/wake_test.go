package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/vigilhq/vigil/plugins/internal/plugintest"
	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The key wake answers for each recorded event (testdata/events) is the
// key admit answers for the watch the event is about, and no other
// watch's.
func TestWakeNamesTheWatchAdmitKeys(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	cases, bodies := plugintest.ReadWakeCases(t, filepath.Join("testdata", "events"))
	plugintest.CheckWake(t, cases, bodies,
		func(params json.RawMessage) (string, error) {
			a, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: params,
				Grants: abi.Grants{Capabilities: []string{abi.CapabilityFetch}, FetchHosts: []string{"*"}}})
			return a.PartitionKey, err
		},
		func(ev abi.WakeRequest) ([]string, error) {
			r, err := h.Wake(ev)
			return r.Keys, err
		})
}

// FuzzWake: whatever the event's name, source and body, wake answers
// keys on the contract (the SDK's checks) and never an error, seeded with
// the recorded events.
func FuzzWake(f *testing.F) {
	cases, bodies := plugintest.ReadWakeCases(f, filepath.Join("testdata", "events"))
	for _, c := range cases {
		f.Add(c.Event, c.Source, []byte(bodies[c.File]))
	}
	f.Add("check_suite", "github", []byte(`{"action":"completed","repository":{"full_name":"a/b","url":"http://[::1"}}`))
	h := sdk.NewHarness(Plugin)
	f.Fuzz(func(t *testing.T, event, source string, body []byte) {
		if !json.Valid(body) {
			body = nil
		}
		if _, err := h.Wake(abi.WakeRequest{Event: event, Source: source, Body: body}); err != nil {
			t.Fatalf("%q %q %q: %v", event, source, body, err)
		}
	})
}
