package hooks

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/sdk/abi"
)

const (
	ghSecret  = "a-github-hook-secret"
	stdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

var t0 = time.Unix(1_800_000_000, 0)

func testSources() *Sources {
	return NewSources(Config{
		"github":   {Kind: "ci", Scheme: abi.SourceGitHub, Secret: ghSecret},
		"gitea":    {Kind: "ci", Scheme: abi.SourceGitea, Secret: ghSecret},
		"standard": {Kind: "http", Scheme: abi.SourceStandard, Secret: stdSecret, Tolerance: time.Minute, ReplayIDs: 2},
	})
}

func stdHeaders(t testing.TB, id string, ts time.Time, body []byte) http.Header {
	t.Helper()
	h, err := webhooks.Headers(stdSecret, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVerify(t *testing.T) {
	body := []byte(`{"action":"completed","check_suite":{"head_sha":"abc"}}`)
	stdBody := []byte(`{"type":"url.changed","url":"https://example.com/"}`)
	gh := http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret, body)}, HeaderGitHubEvent: {"check_suite"}}
	gt := http.Header{HeaderGiteaSignature: {SignGitea(ghSecret, body)}, HeaderGiteaEvent: {"status"}}
	tests := []struct {
		name   string
		source string
		h      http.Header
		body   []byte
		now    time.Time
		event  string
		err    error
	}{
		{"github", "github", gh, body, t0, "check_suite", nil},
		{"github upper-case hex", "github", http.Header{HeaderGitHubSignature: {"sha256=" + upper(SignGitea(ghSecret, body))}}, body, t0, "", nil},
		{"github body changed", "github", gh, append([]byte(" "), body...), t0, "", ErrUnverified},
		{"github no signature", "github", http.Header{HeaderGitHubEvent: {"check_suite"}}, body, t0, "", ErrUnverified},
		{"github twice", "github", http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret, body), SignGitHub(ghSecret, body)}}, body, t0, "", ErrUnverified},
		{"github without sha256=", "github", http.Header{HeaderGitHubSignature: {SignGitea(ghSecret, body)}}, body, t0, "", ErrUnverified},
		{"github other secret", "github", http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret+"x", body)}}, body, t0, "", ErrUnverified},
		{"github truncated", "github", http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret, body)[:60]}}, body, t0, "", ErrUnverified},
		{"gitea", "gitea", gt, body, t0, "status", nil},
		{"gitea a github signature", "gitea", http.Header{HeaderGiteaSignature: {SignGitHub(ghSecret, body)}}, body, t0, "", ErrUnverified},
		{"gitea not json", "gitea", http.Header{HeaderGiteaSignature: {SignGitea(ghSecret, []byte("x"))}}, []byte("x"), t0, "", ErrEvent},
		{"standard", "standard", stdHeaders(t, "msg_1", t0, stdBody), stdBody, t0.Add(59 * time.Second), "url.changed", nil},
		{"standard too old", "standard", stdHeaders(t, "msg_2", t0, stdBody), stdBody, t0.Add(61 * time.Second), "", ErrUnverified},
		{"standard from the future", "standard", stdHeaders(t, "msg_3", t0.Add(61*time.Second), stdBody), stdBody, t0, "", ErrUnverified},
		{"unknown source", "nope", gh, body, t0, "", ErrUnknownSource},
		{"event name not ascii", "github", http.Header{HeaderGitHubSignature: {SignGitHub(ghSecret, body)}, HeaderGitHubEvent: {"é"}}, body, t0, "", ErrEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := testSources().Verify(tt.source, tt.h, tt.body, tt.now)
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tt.err)
			}
			if err == nil && (ev.Wake.Event != tt.event || string(ev.Wake.Body) != string(tt.body) || ev.Source != tt.source) {
				t.Fatalf("event = %+v, want name %q", ev, tt.event)
			}
		})
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'f' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestReplayWindow: a webhook-id is accepted once while its timestamp is
// within the tolerance; the window forgets it after, and holds at most
// ReplayIDs ids, counting those it had to let go of early.
func TestReplayWindow(t *testing.T) {
	s := testSources()
	body := []byte(`{"type":"x"}`)
	h := stdHeaders(t, "msg_a", t0, body)
	if _, err := s.Verify("standard", h, body, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify("standard", h, body, t0.Add(time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("the replay: %v, want ErrReplay", err)
	}
	if c := s.Counts(); c.Replayed != 1 || c.Verified != 1 {
		t.Fatalf("counts %+v", c)
	}
	// A reload with the same secret keeps the window.
	s.Set(Config{"standard": {Kind: "http", Scheme: abi.SourceStandard, Secret: stdSecret, Tolerance: time.Minute, ReplayIDs: 2}})
	if _, err := s.Verify("standard", h, body, t0.Add(2*time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("the replay after a reload: %v, want ErrReplay", err)
	}
	// Full (two ids), the window lets go of the one expiring first.
	for i := range 2 {
		id := "msg_b" + strconv.Itoa(i)
		if _, err := s.Verify("standard", stdHeaders(t, id, t0.Add(time.Duration(i+1)*time.Second), body), body, t0.Add(3*time.Second)); err != nil {
			t.Fatal(id, err)
		}
	}
	if c := s.Counts(); c.Forgotten != 1 {
		t.Fatalf("forgotten = %d, want 1", c.Forgotten)
	}
	if _, err := s.Verify("standard", h, body, t0.Add(4*time.Second)); err != nil {
		t.Fatalf("an id let go of early is accepted again (one extra look): %v", err)
	}
	if _, err := s.Verify("standard", stdHeaders(t, "msg_b1", t0.Add(2*time.Second), body), body, t0.Add(5*time.Second)); !errors.Is(err, ErrReplay) {
		t.Fatalf("msg_b1 replayed: %v", err)
	}
}

// TestUnverifiedCounted: each refused signature is counted, and nothing
// of the request is read past it.
func TestUnverifiedCounted(t *testing.T) {
	s := testSources()
	for range 3 {
		if _, err := s.Verify("github", http.Header{HeaderGitHubSignature: {"sha256=00"}}, []byte(`{}`), t0); !errors.Is(err, ErrUnverified) {
			t.Fatal(err)
		}
	}
	if c := s.Counts(); c.Unverified != 3 || c.Verified != 0 {
		t.Fatalf("counts %+v", c)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Source{Kind: "ci", Scheme: abi.SourceGitHub, Secret: ghSecret}
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"github", Config{"github": ok}, true},
		{"standard", Config{"s": {Kind: "http", Scheme: abi.SourceStandard, Secret: stdSecret}}, true},
		{"no kind", Config{"g": {Scheme: abi.SourceGitHub, Secret: ghSecret}}, false},
		{"short secret", Config{"g": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: "short"}}, false},
		{"standard secret not whsec", Config{"s": {Kind: "http", Scheme: abi.SourceStandard, Secret: ghSecret}}, false},
		{"unknown scheme", Config{"g": {Kind: "ci", Scheme: "gitlab", Secret: ghSecret}}, false},
		{"bad name", Config{"Git Hub": ok}, false},
		{"fallback too short", Config{"g": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: ghSecret, Fallback: time.Millisecond}}, false},
		{"negative tolerance", Config{"g": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: ghSecret, Tolerance: -1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrConfig)) {
				t.Fatalf("Validate = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

func TestFallbacks(t *testing.T) {
	s := NewSources(Config{
		"a": {Kind: "ci", Scheme: abi.SourceGitHub, Secret: ghSecret},
		"b": {Kind: "ci", Scheme: abi.SourceGitea, Secret: ghSecret, Fallback: time.Minute},
		"c": {Kind: "ticket", Scheme: abi.SourceGitHub, Secret: ghSecret},
	})
	f := s.Fallbacks()
	if f["ci"] != time.Minute || f["ticket"] != DefaultFallback || len(f) != 2 {
		t.Fatalf("fallbacks %v", f)
	}
}
