package runner

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// BenchmarkSpawn: the runner's overhead per command (issue 9's
// Performance goal: within 2× of a bare os/exec run of /bin/true).
//
//   - bare: exec.Command("/bin/true").Run(), standard streams on /dev/null.
//   - runner: Runner.Run of /bin/true: the checks, a process group, pipes
//     and readers for both streams, the wait for exit and the group sweep.
//   - interleaved: one of each per iteration, timed separately, so both
//     see the same machine at the same moment; reports each one's ns and
//     runner/bare, the ratio to compare with the goal.
func BenchmarkSpawn(b *testing.B) {
	ps, err := ResolvePrograms([]string{"/bin/true"})
	if err != nil {
		b.Skip(err)
	}
	g := Grant{Programs: ps, MaxTimeout: time.Minute}
	r := New(Config{})
	dir := b.TempDir()
	ctx := context.Background()
	req := abi.ExecRequest{Argv: []string{"/bin/true"}}
	bare := func(b *testing.B) {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
	runner := func(b *testing.B) {
		if resp := r.Run(ctx, g, dir, req); resp.Failure != nil || resp.ExitCode != 0 {
			b.Fatalf("%+v", resp)
		}
	}
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			bare(b)
		}
	})
	b.Run("runner", func(b *testing.B) {
		for b.Loop() {
			runner(b)
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		var tBare, tRunner time.Duration
		n := 0
		for b.Loop() {
			start := time.Now()
			bare(b)
			mid := time.Now()
			runner(b)
			tRunner += time.Since(mid)
			tBare += mid.Sub(start)
			n++
		}
		b.ReportMetric(float64(tBare.Nanoseconds())/float64(n), "bare-ns/op")
		b.ReportMetric(float64(tRunner.Nanoseconds())/float64(n), "runner-ns/op")
		b.ReportMetric(float64(tRunner)/float64(tBare), "runner/bare")
	})
}
