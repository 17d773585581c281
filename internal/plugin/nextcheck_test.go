package plugin

import (
	"errors"
	"github.com/vigilhq/vigil/api"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/kind"
)

// Admit's next_check is the Admission's NextCheck, in UTC; none is zero.
// An instant already past is on the contract (admit has no clock: the
// scheduler probes such a watch at once), and so is the deadline itself.
func TestAdmitCarriesTheNextCheck(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	for _, tt := range []struct {
		answer string
		want   time.Time
	}{
		{`{"ok":true,"next_check":"2030-01-01T14:00:00Z","deadline":"2030-01-01T14:01:00Z"}`, time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)},
		{`{"ok":true,"next_check":"2030-01-01T15:00:00+01:00"}`, time.Date(2030, 1, 1, 14, 0, 0, 0, time.UTC)},
		{`{"ok":true,"next_check":"2030-01-01T14:01:00Z","deadline":"2030-01-01T14:01:00Z"}`, time.Date(2030, 1, 1, 14, 1, 0, 0, time.UTC)},
		{`{"ok":true,"next_check":"1970-01-01T00:00:00Z"}`, time.Unix(0, 0).UTC()},
		{`{"ok":true,"next_check":"2001-01-01T00:00:00.5Z"}`, time.Date(2001, 1, 1, 0, 0, 0, 5e8, time.UTC)},
		{`{"ok":true}`, time.Time{}},
	} {
		adm, err := admitAnswer(r, tt.answer)
		if err != nil || !adm.NextCheck.Equal(tt.want) || (!tt.want.IsZero() && adm.NextCheck.Location() != time.UTC) {
			t.Errorf("%s: next check %v, %v; want %v", tt.answer, adm.NextCheck, err, tt.want)
		}
	}
}

// A next_check off the contract (on a refusal, before the Unix epoch,
// after the natural deadline the same answer gives) is the plugin's
// fault, as a partition key's is: never a refusal that blames the caller.
func TestANextCheckOffTheContractIsAFault(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	for name, answer := range map[string]string{
		"on a refusal":         `{"ok":false,"code":"invalid_params","message":"no","next_check":"2030-01-01T14:00:00Z"}`,
		"before the epoch":     `{"ok":true,"next_check":"1969-12-31T23:59:59.999999999Z"}`,
		"in year 0":            `{"ok":true,"next_check":"0000-01-01T00:00:00Z"}`,
		"after the deadline":   `{"ok":true,"next_check":"2030-01-01T14:01:00.000000001Z","deadline":"2030-01-01T14:01:00Z"}`,
		"after it, at offsets": `{"ok":true,"next_check":"2030-01-01T16:02:00+02:00","deadline":"2030-01-01T14:01:00Z"}`,
		"not an RFC 3339 time": `{"ok":true,"next_check":"2030-01-01 14:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := admitAnswer(r, answer)
			var ce *kind.CallError
			var ref *api.Error
			if !errors.As(err, &ce) || ce.Reason != kind.FaultContract || errors.As(err, &ref) {
				t.Fatalf("admit = %v; want a bad_output fault", err)
			}
			if name != "not an RFC 3339 time" && !errors.Is(err, ErrBadNextCheck) {
				t.Fatalf("admit = %v; want ErrBadNextCheck", err)
			}
		})
	}
}
