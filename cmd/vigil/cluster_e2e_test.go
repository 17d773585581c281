package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/wasmbuild"
)

// `vigil serve --store nats://…` against an embedded JetStream server is
// a node of a one-node cluster: it answers /healthz, takes every
// partition, fires a timer registered through it once, and stops cleanly
// on SIGTERM.
func TestServeOnJetStream(t *testing.T) {
	bin := buildVigil(t)
	srv := natstest.Start(t)
	addr := freePort(t)
	base := "http://" + addr
	s := startServer(t, bin, addr, t.TempDir(), "--store", srv.ClientURL())
	if !strings.Contains(s.logs.String(), `"store":"nats `+srv.ClientURL()) {
		t.Fatalf("the start-up line does not name the JetStream store:\n%s", s.logs)
	}
	at := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	status, body := postJSON(t, base+"/api/v1/watches", `{"kind":"timer","params":{"at":"`+at+`"},"recipient":{"id":"agent-1"}}`)
	if status != 201 {
		t.Fatalf("register: %d %s", status, body)
	}
	var w api.Watch
	_ = json.Unmarshal(body, &w)
	var got []api.Message
	var after uint64
	for deadline := time.Now().Add(30 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		mb := readMailbox(t, base, after, "5s")
		got = append(got, mb.Messages...)
		after = mb.Next
	}
	if len(got) != 1 || got[0].WatchID != w.ID || got[0].Type != "fired" {
		t.Fatalf("the timer's messages: %+v\n%s", got, s.logs)
	}
	// The node has joined (it probed the timer): GET /api/v1/cluster
	// shows it holding every partition and job.
	resp, err := http.Get(base + "/api/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	var cl api.Cluster
	err = json.NewDecoder(resp.Body).Decode(&cl)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/cluster: %d %v", resp.StatusCode, err)
	}
	if cl.Mode != "cluster" || len(cl.Nodes) != 1 || !cl.Nodes[0].Self || len(cl.Nodes[0].PluginSetDigest) != 64 || cl.Nodes[0].Seen == nil {
		t.Fatalf("cluster: %+v", cl)
	}
	if len(cl.Partitions) != 64 || len(cl.Jobs) == 0 {
		t.Fatalf("%d partitions and %d jobs, want 64 and the cluster-wide jobs", len(cl.Partitions), len(cl.Jobs))
	}
	for _, p := range append(cl.Partitions, cl.Jobs...) {
		if p.Owner != cl.Nodes[0].Name || p.RenewedAt == nil {
			t.Fatalf("lease %+v, want it held by %s", p, cl.Nodes[0].Name)
		}
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("vigil serve on JetStream did not stop cleanly: %v\n%s", err, s.logs)
	}
}

// A bad --store refuses to start, naming the setting.
func TestServeRefusesABadStore(t *testing.T) {
	_, err := settingsFor(t, []string{"--store", "nats://127.0.0.1"}, nil, "")
	if err == nil || !strings.Contains(err.Error(), "invalid store (from --store)") {
		t.Fatalf("err = %v", err)
	}
}

// SIGHUP on a cluster node publishes its reloaded plugin set: a plugin
// dropped into --plugins and reloaded moves the node's digest in GET
// /api/v1/cluster, as the other nodes read it from the leases bucket.
func TestServeOnJetStreamRepublishesItsPluginSetOnSIGHUP(t *testing.T) {
	bin := buildVigil(t)
	srv := natstest.Start(t)
	addr := freePort(t)
	base := "http://" + addr
	plugins := t.TempDir()
	s := startServer(t, bin, addr, t.TempDir(), "--store", srv.ClientURL(), "--plugins", plugins)
	digest := func() string {
		t.Helper()
		resp, err := http.Get(base + "/api/v1/cluster")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var cl api.Cluster
		if err := json.NewDecoder(resp.Body).Decode(&cl); err != nil || len(cl.Nodes) != 1 {
			return ""
		}
		return cl.Nodes[0].PluginSetDigest
	}
	var before string
	natstest.WaitFor(t, 30*time.Second, "the node published", func() bool { before = digest(); return before != "" })
	if err := wasmbuild.BuildFile(filepath.Join("..", "..", "internal", "plugin", "testdata", "destsnofetch"), filepath.Join(plugins, "destsnofetch.wasm")); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, 30*time.Second, "the reloaded set published", func() bool { d := digest(); return d != "" && d != before })
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("vigil serve did not stop cleanly: %v\n%s", err, s.logs)
	}
}
