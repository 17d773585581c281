package conformance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// answerer says what the fake fetch answers a request.
type answerer func(req abi.FetchRequest) abi.FetchResponse

// scope is one plugin call's view of the fake fetch: what it answers and
// every request the call made. It rides the call's context, which the
// runtime hands to vigil_fetch, so calls made side by side never see each
// other's answers or requests.
type scope struct {
	answer answerer
	mu     sync.Mutex
	reqs   []abi.FetchRequest
}

func (s *scope) requests() []abi.FetchRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]abi.FetchRequest(nil), s.reqs...)
}

type scopeKey struct{}

// withScope returns ctx carrying a new scope that answers with a.
func withScope(ctx context.Context, a answerer) (context.Context, *scope) {
	s := &scope{answer: a}
	return context.WithValue(ctx, scopeKey{}, s), s
}

// fakeFetch is the suite's plugin.Fetcher: nothing reaches a network. A
// call outside any scope (a fetch from describe) is refused.
type fakeFetch struct{}

func (f *fakeFetch) Fetch(ctx context.Context, call plugin.FetchCall) abi.FetchResponse {
	s, _ := ctx.Value(scopeKey{}).(*scope)
	if s == nil {
		return failure(abi.FetchUnavailable, "the conformance suite's fake fetch has no answer for this call")
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, call.Request)
	s.mu.Unlock()
	return s.answer(call.Request)
}

var _ plugin.Fetcher = (*fakeFetch)(nil)

// meter counts every vigil_fetch a plugin makes, granted or not: a kind
// that declares no fetch capability is refused by the runtime before the
// Fetcher sees the request, and that attempt must count too.
type meter struct {
	fetches atomic.Int64
}

func (m *meter) PluginCall(string, string, string, time.Duration) {}
func (m *meter) Fetch(string, string)                             { m.fetches.Add(1) }

var _ plugin.Metrics = (*meter)(nil)

func failure(reason, msg string) abi.FetchResponse {
	return abi.FetchResponse{Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
}

// fingerprint is the host's fingerprint of a body: its hex SHA-256.
func fingerprint(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// response is an HTTP answer with the headers a JSON API gives.
func response(status int, body string, headers map[string]string) abi.FetchResponse {
	h := map[string]string{"content-type": "application/json"}
	for k, v := range headers {
		h[k] = v
	}
	b := []byte(body)
	return abi.FetchResponse{Status: status, Headers: h, Body: b, Fingerprint: fingerprint(b)}
}

// The generic answers. A plugin sees the same answer for every request,
// so the same input always meets the same responses.
var (
	genericBody = `{}`
	changedBody = `{"conformance":"changed","updated":true}`
)

func answerOK(abi.FetchRequest) abi.FetchResponse {
	return response(200, genericBody, map[string]string{"etag": `"conformance-1"`})
}

func answerChanged(abi.FetchRequest) abi.FetchResponse {
	return response(200, changedBody, map[string]string{"etag": `"conformance-2"`})
}

// answerAdmit is what a fetch made from admit meets: nothing. The suite
// counts the attempt; admit.no-fetch fails on it.
func answerAdmit(abi.FetchRequest) abi.FetchResponse {
	return failure(abi.FetchUnavailable, "admit gets no fetch: admission is configuration only")
}

// failureScenario is one way a fetch can leave a plugin unable to tell.
type failureScenario struct {
	name   string
	answer answerer
}

// failureScenarios are the answers observe.fetch-failure-is-pending
// plays: three failures with no response, and two HTTP answers (a 503 or
// a 429 is a response, with its status, not a failure).
var failureScenarios = []failureScenario{
	{"timeout", func(abi.FetchRequest) abi.FetchResponse {
		return failure(abi.FetchTimeout, "no response within 4s")
	}},
	{"rate_limited", func(abi.FetchRequest) abi.FetchResponse {
		return failure(abi.FetchRateLimited, "the host is pacing this origin; retry after 8s")
	}},
	{"destination_refused", func(abi.FetchRequest) abi.FetchResponse {
		return failure(abi.FetchDestinationRefused, "the destination resolves to a private address")
	}},
	{"http_503", func(abi.FetchRequest) abi.FetchResponse {
		return response(503, `{"message":"Service Unavailable"}`, map[string]string{"retry-after": "30"})
	}},
	{"http_429", func(abi.FetchRequest) abi.FetchResponse {
		return response(429, `{"message":"API rate limit exceeded"}`, map[string]string{"retry-after": "60", "x-ratelimit-remaining": "0"})
	}},
}

// execAnswerer says what the fake exec answers a command.
type execAnswerer func(req abi.ExecRequest) abi.ExecResponse

// execScopeKey keys the fake exec's answer for one plugin call in its
// context.
type execScopeKey struct{}

// withExec returns ctx whose commands the fake exec answers with a.
func withExec(ctx context.Context, a execAnswerer) context.Context {
	return context.WithValue(ctx, execScopeKey{}, a)
}

// fakeExec is the suite's plugin.Execer: it runs nothing. A command meets
// the answer its call's context carries, or a clean exit with "ok".
type fakeExec struct{}

func (fakeExec) Exec(ctx context.Context, call plugin.ExecCall) abi.ExecResponse {
	if a, ok := ctx.Value(execScopeKey{}).(execAnswerer); ok {
		return a(call.Request)
	}
	return execOK(call.Request)
}

var _ plugin.Execer = fakeExec{}

func execOK(abi.ExecRequest) abi.ExecResponse { return abi.ExecResponse{ExitCode: 0, Stdout: "ok\n"} }

func execFailure(reason, msg string) execAnswerer {
	return func(abi.ExecRequest) abi.ExecResponse {
		return abi.ExecResponse{ExitCode: -1, Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
	}
}

// execFailureScenarios are the answers observe.exec-failure-is-pending
// plays: a command that timed out, and commands that could not run.
var execFailureScenarios = []struct {
	name   string
	answer execAnswerer
}{
	{"timed_out", func(abi.ExecRequest) abi.ExecResponse {
		return abi.ExecResponse{ExitCode: -1, TimedOut: true, Stderr: "partial output\n"}
	}},
	{"not_granted", execFailure(abi.ExecNotGranted, "the program is not on the grant's list")},
	{"no_workspace", execFailure(abi.ExecNoWorkspace, "the recipient declares no workspace")},
	{"start_failed", execFailure(abi.ExecStartFailed, "exec format error")},
}
