package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/httpapi"
)

// The CLI meets the host's bounds as every client does: the API's
// refusal, its code and field, and the usage exit code (a 4xx is the
// caller's mistake). Nothing is bounded on the client's side alone.
func TestBoundsReachTheCLI(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	deep := `{"x":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}`
	for _, tt := range []struct {
		name        string
		args        []string
		code, field string
	}{
		{"every of 2562047h", []string{"watch", "add", "slow", "--for", "agent-1", "--every", "2562047h"}, api.CodeInvalidField, "every"},
		{"params 500 deep", []string{"watch", "add", "slow", "--for", "agent-1", "--params-json", deep}, api.CodeInvalidParams, "params.x." + strings.TrimSuffix(strings.Repeat("0.", 31), ".")},
		{"a 200,000-byte webhook URL", []string{"recipient", "set", "agent-1", "--status", "running", "--webhook", "https://example.com/" + strings.Repeat("a", 200_000)}, api.CodeInvalidField, "webhook.url"},
		{"a 700 KB webhook secret", []string{"recipient", "set", "agent-1", "--status", "running", "--webhook", "https://example.com/h", "--secret", "whsec_" + strings.Repeat("AAAA", 700<<10/4)}, api.CodeInvalidField, "webhook.secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := f.vigil(t, tt.args...)
			var ae *api.Error
			if !errors.As(err, &ae) || ae.Code != tt.code || ae.Field != tt.field || exitCode(err) != ExitUsage {
				t.Fatalf("%v (exit %d), want %s naming %s, exit %d", err, exitCode(err), tt.code, tt.field, ExitUsage)
			}
		})
	}
}
