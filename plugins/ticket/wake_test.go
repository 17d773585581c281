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
