package conformance

import (
	"context"
	"testing"
)

// BenchmarkCheckTimer is the whole suite over the bundled timer, with the
// compilation cache warm (the first iteration warms it).
func BenchmarkCheckTimer(b *testing.B) {
	opts := testOptions()
	for b.Loop() {
		rep, err := Check(context.Background(), timerWasm, opts)
		if err != nil || !rep.Passed {
			b.Fatalf("%v %v", err, rep.Failed())
		}
	}
}
