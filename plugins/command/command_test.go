package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var grants = sdk.Grants{Capabilities: []string{"exec"}, Programs: []string{"/usr/bin/kubectl", "/bin/true", "/opt/bin/check.sh"}, ExecMaxTimeout: "1m0s"}

func TestAdmit(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for name, tt := range map[string]struct {
		params string
		g      sdk.Grants
		code   string
		field  string
	}{
		"granted by path":      {`{"argv":["/usr/bin/kubectl","rollout","status","deploy/web"]}`, grants, "", ""},
		"granted by base name": {`{"argv":["kubectl","rollout","status"],"timeout":"30s"}`, grants, "", ""},
		"not granted":          {`{"argv":["/bin/sh","-c","true"]}`, grants, "unobservable", ""},
		"same base elsewhere":  {`{"argv":["/usr/local/bin/kubectl"]}`, grants, "unobservable", ""},
		"no exec grant":        {`{"argv":["true"]}`, sdk.Grants{Capabilities: []string{}}, "unobservable", ""},
		"timeout over max":     {`{"argv":["true"],"timeout":"2m"}`, grants, "invalid_params", "timeout"},
		"timeout junk":         {`{"argv":["true"],"timeout":"soon"}`, grants, "invalid_params", "timeout"},
		"empty program":        {`{"argv":[""]}`, grants, "invalid_params", "argv"},
		"nul in an argument":   {`{"argv":["true","a\u0000b"]}`, grants, "invalid_params", "argv[1]"},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(tt.params), Grants: tt.g})
			if err != nil {
				t.Fatal(err)
			}
			if tt.code == "" {
				if !r.OK {
					t.Fatalf("refused: %+v", r)
				}
				return
			}
			if r.OK || r.Code != tt.code || (tt.field != "" && r.Field != tt.field) {
				t.Fatalf("got %+v, want %s %s", r, tt.code, tt.field)
			}
			if tt.code == "unobservable" && !strings.HasPrefix(r.Setting, "kinds.command.exec") {
				t.Fatalf("setting %q", r.Setting)
			}
		})
	}
}

// fakeHost answers every command with resp (or err) and records the
// request.
type fakeHost struct {
	sdk.FetcherFunc
	resp sdk.ExecResponse
	got  *sdk.ExecRequest
}

func (f fakeHost) Exec(req sdk.ExecRequest) (sdk.ExecResponse, error) {
	*f.got = req
	return f.resp, nil
}

func observeWith(t *testing.T, params string, resp sdk.ExecResponse) (abi.ObserveResponse, sdk.ExecRequest) {
	t.Helper()
	var got sdk.ExecRequest
	out, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{Kind: Kind, WatchID: "w", Now: now, Attempt: 1, Params: json.RawMessage(params)},
		fakeHost{resp: resp, got: &got})
	if err != nil {
		t.Fatal(err)
	}
	return out, got
}

func TestObserve(t *testing.T) {
	// Success: the expected exit, with the output's tail in the outcome.
	out, req := observeWith(t, `{"argv":["kubectl","rollout","status"],"timeout":"20s"}`, sdk.ExecResponse{ExitCode: 0, Stdout: "deployment \"web\" successfully rolled out\n"})
	if out.Status != abi.StatusSettled || out.Outcome.Result != "succeeded" || !strings.Contains(string(out.Outcome.Detail), "successfully rolled out") {
		t.Fatalf("success: %+v", out)
	}
	if len(req.Argv) != 3 || req.TimeoutSeconds != 20 {
		t.Fatalf("request %+v", req)
	}
	for name, tt := range map[string]struct {
		params string
		resp   sdk.ExecResponse
		note   string
	}{
		"failing":          {`{"argv":["true"]}`, sdk.ExecResponse{ExitCode: 1, Stderr: "not ready\n"}, "exit 1, waiting for 0: not ready"},
		"timed out":        {`{"argv":["true"]}`, sdk.ExecResponse{ExitCode: -1, TimedOut: true}, "could not tell"},
		"not granted":      {`{"argv":["true"]}`, sdk.ExecResponse{ExitCode: -1, Failure: &abi.FetchFailure{Reason: abi.ExecNotGranted, Message: "no"}}, "not_granted"},
		"no workspace":     {`{"argv":["true"]}`, sdk.ExecResponse{ExitCode: -1, Failure: &abi.FetchFailure{Reason: abi.ExecNoWorkspace, Message: "none"}}, "no_workspace"},
		"output not there": {`{"argv":["true"],"output_contains":"READY"}`, sdk.ExecResponse{Stdout: "starting"}, "does not contain"},
		"other exit":       {`{"argv":["true"],"expect_exit":3}`, sdk.ExecResponse{ExitCode: 0}, "waiting for 3"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _ := observeWith(t, tt.params, tt.resp)
			if out.Status != abi.StatusPending || !strings.Contains(out.Note, tt.note) {
				t.Fatalf("got %+v, want pending with %q", out, tt.note)
			}
		})
	}
	if out, _ := observeWith(t, `{"argv":["true"],"expect_exit":3,"output_contains":"READY"}`, sdk.ExecResponse{ExitCode: 3, Stderr: "READY"}); out.Status != abi.StatusSettled {
		t.Fatalf("expected exit and output: %+v", out)
	}
}

func TestTailIsBounded(t *testing.T) {
	long := strings.Repeat("line\n", 2000)
	if got := tail(long); len(got) > tailBytes || !strings.HasPrefix(got, "line") {
		t.Fatalf("tail %d bytes: %.20q", len(got), got)
	}
}

func TestWrongKind(t *testing.T) {
	_, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{Kind: "timer", Params: json.RawMessage(`{"argv":["true"]}`)}, nil)
	if err == nil {
		t.Fatal("a call for another kind answered")
	}
}
