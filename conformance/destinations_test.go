package conformance

import (
	"strings"
	"testing"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// admit.names-destinations warns a kind that fetches and names nothing,
// and only such a kind.
func TestNamesDestinations(t *testing.T) {
	fetching := kind.Info{Capabilities: []string{abi.CapabilityFetch}}
	named := &kind.Admission{Destinations: []abi.Destination{{Target: "https://x.example/", Field: "url"}}}
	tests := []struct {
		name string
		info kind.Info
		adm  *kind.Admission
		want Status
		says string
	}{
		{"a fetching kind naming nothing", fetching, &kind.Admission{}, Fail, "names no destination"},
		{"a fetching kind naming its URL", fetching, named, Pass, "https://x.example/ (url)"},
		{"a kind that does not fetch", kind.Info{}, &kind.Admission{}, Pass, "does not fetch"},
		{"no example admitted", fetching, nil, Skip, "admit.example"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &suite{info: tt.info, exampleAdm: tt.adm}
			st, msg := s.namesDestinations()
			if st != tt.want || !strings.Contains(msg, tt.says) {
				t.Fatalf("namesDestinations = %s %q, want %s saying %q", st, msg, tt.want, tt.says)
			}
		})
	}
}
