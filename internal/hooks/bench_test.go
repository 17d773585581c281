package hooks_test

// BenchmarkHookEvents is the hook endpoint under a flood of events beside
// timers, the load BenchmarkLateness (internal/scheduler) measures
// without events. Run with
//
//	go test -run XXX -bench HookEvents -benchtime 1x ./internal/hooks/
//
// Each pass registers 10,000 pending ci watches on 1,000 commits (ten a
// commit, each commit a partition key) and 1,000 timers, both spread
// over 64 recipients as BenchmarkLateness spreads its watches, the timers due over the
// second after the flood starts; then 8 clients POST signed check_suite
// events, each naming one of the commits at random, over a loopback
// listener for two seconds (VIGIL_BENCH_HOOK_CLIENTS sets how many
// clients; 0 measures the timers alone). The events go through the real route,
// verifier, queue and worker, the store's index by partition key and
// the scheduler's coalesced poke; the kind's wake and observe are test
// doubles (the wake reads head_sha from the body; a probe answers
// pending at once), so the figure is the host's, not a plugin's. It
// reports the events accepted a second (events/s, 202s), those refused
// with 503 (busy/s), and the timers' lateness (p50-ms-late,
// p99-ms-late). The goals: at least 5,000 events/s, a p99 of at most
// 100 ms.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/hooks"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/storetest"
)

// shaWake is a wake test double: the commit key of a check_suite body.
type shaWake struct{}

func (shaWake) Wake(_ context.Context, kindName string, ev abi.WakeRequest) ([]string, error) {
	var b struct {
		CheckSuite struct {
			HeadSHA string `json:"head_sha"`
		} `json:"check_suite"`
	}
	if err := json.Unmarshal(ev.Body, &b); err != nil || b.CheckSuite.HeadSHA == "" {
		return nil, nil
	}
	return []string{"commits/" + b.CheckSuite.HeadSHA}, nil
}

func BenchmarkHookEvents(b *testing.B) {
	const (
		watches = 10_000
		commits = 1_000
		timers  = 1_000
		flood   = 2 * time.Second
	)
	clients := 32
	if v := os.Getenv("VIGIL_BENCH_HOOK_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		clients = n
	}
	var late []time.Duration
	var accepted, busy atomic.Int64
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		var (
			mu     sync.Mutex
			dueOf  = map[string]time.Time{}
			probed sync.WaitGroup
		)
		probed.Add(timers)
		var ciProbes atomic.Int64
		pl := hosttest.NewFakeKinds(
			kind.Info{Kind: "ci", DefaultEvery: 5 * time.Minute},
			kind.Info{Kind: "timer", DefaultEvery: time.Hour},
		).OnAdmit(func(name string, req kind.AdmitRequest) (kind.Admission, error) {
			var p struct {
				SHA string `json:"sha"`
				At  int64  `json:"at"`
			}
			_ = json.Unmarshal(req.Params, &p)
			if name == "timer" {
				at := time.Unix(0, p.At)
				return kind.Admission{NextCheck: at, Deadline: at.Add(time.Hour)}, nil
			}
			return kind.Admission{PartitionKey: "commits/" + p.SHA}, nil
		}).OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
			if req.Kind != "timer" {
				ciProbes.Add(1)
				return hosttest.Pending("running")
			}
			mu.Lock()
			due, ok := dueOf[req.WatchID]
			if ok {
				late = append(late, time.Since(due))
				delete(dueOf, req.WatchID)
			}
			mu.Unlock()
			if ok {
				probed.Done()
			}
			return hosttest.Settled("fired")
		})
		stack := apitest.NewStack(b, apitest.Config{Plugins: pl, Clock: clock.Wall{}})
		for r := range 64 {
			storetest.Running(b, stack.Store, fmt.Sprintf("agent-%d", r), "")
		}
		ctx := context.Background()
		runCtx, cancel := context.WithCancel(ctx)
		stopSched := lifecycle.Go(runCtx, stack.Scheduler.Run)
		sha := func(i int) string { return fmt.Sprintf("%040x", i) }
		for i := range watches {
			params, _ := json.Marshal(map[string]any{"sha": sha(i % commits)})
			if _, err := stack.Scheduler.Register(ctx, scheduler.Registration{Kind: "ci", Params: params, Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%64)}}); err != nil {
				b.Fatal(err)
			}
		}
		// The probes at registration are done before the timers are due.
		for ciProbes.Load() < watches {
			time.Sleep(10 * time.Millisecond)
		}
		start := time.Now().Add(time.Second)
		for i := range timers {
			at := start.Add(time.Second * time.Duration(i) / timers)
			params, _ := json.Marshal(map[string]any{"at": at.UnixNano()})
			w, err := stack.Scheduler.Register(ctx, scheduler.Registration{Kind: "timer", Params: params, Recipient: store.Recipient{ID: fmt.Sprintf("agent-%d", i%64)}})
			if err != nil {
				b.Fatal(err)
			}
			mu.Lock()
			dueOf[w.ID.String()] = at
			mu.Unlock()
		}
		recv := hooks.NewReceiver(hooks.ReceiverConfig{
			Sources: hooks.NewSources(hooks.Config{"github": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: e2eSecret}}),
			Wake:    shaWake{}, Poke: stack.Scheduler,
		})
		stopRecv := lifecycle.Go(runCtx, recv.Run)
		url := apitest.Serve(b, httpapi.New(httpapi.Deps{Hooks: recv}, httpapi.Options{})) + httpapi.HooksPath + "github"
		bodies := make([][]byte, commits)
		sigs := make([]string, commits)
		for i := range commits {
			bodies[i] = []byte(`{"action":"completed","check_suite":{"head_sha":"` + sha(i) + `"}}`)
			sigs[i] = hooks.SignGitHub(e2eSecret, bodies[i])
		}
		time.Sleep(time.Until(start.Add(-200 * time.Millisecond)))
		b.StartTimer()
		t0 := time.Now()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
				r := rand.New(rand.NewPCG(uint64(c), 7))
				for time.Since(t0) < flood {
					i := r.IntN(commits)
					req, _ := http.NewRequest("POST", url, bytes.NewReader(bodies[i]))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set(hooks.HeaderGitHubEvent, "check_suite")
					req.Header.Set(hooks.HeaderGitHubSignature, sigs[i])
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_ = resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusAccepted:
						accepted.Add(1)
					case http.StatusServiceUnavailable:
						busy.Add(1)
					default:
						b.Errorf("hook answered %d", resp.StatusCode)
						return
					}
				}
			}()
		}
		wg.Wait()
		elapsed += max(time.Since(t0), flood)
		probed.Wait()
		b.StopTimer()
		cancel()
		_ = stopRecv()
		_ = stopSched()
	}
	b.ReportMetric(float64(accepted.Load())/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(busy.Load())/elapsed.Seconds(), "busy/s")
	benchtest.Percentiles(b, late, time.Millisecond, "ms-late")
}
