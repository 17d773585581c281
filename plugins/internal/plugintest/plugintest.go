package plugintest

import (
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
