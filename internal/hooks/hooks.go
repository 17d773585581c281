package hooks

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/sdk/abi"
)

// The headers the GitHub and Gitea schemes read.
const (
	HeaderGitHubSignature = "X-Hub-Signature-256"
	HeaderGitHubEvent     = "X-GitHub-Event"
	HeaderGiteaSignature  = "X-Gitea-Signature"
	HeaderGiteaEvent      = "X-Gitea-Event"
)

// Bounds and defaults.
const (
	// MaxBody bounds a hook's body, in bytes.
	MaxBody = 1 << 20
	// DefaultFallback is the cadence of a hooked kind's watches whose
	// every was left to the default.
	DefaultFallback = 5 * time.Minute
	// DefaultReplayIDs bounds the webhook-ids a Standard Webhooks source
	// remembers.
	DefaultReplayIDs = 100_000
	// MinSecret is the shortest GitHub or Gitea secret a source takes.
	MinSecret = 16
)

// Sentinel errors.
var (
	// ErrUnknownSource: no source of that name is configured.
	ErrUnknownSource = errors.New("no hook source of that name")
	// ErrUnverified: the signature is missing, malformed or wrong, or a
	// Standard Webhooks timestamp is out of tolerance.
	ErrUnverified = errors.New("the hook's signature does not verify")
	// ErrReplay: a Standard Webhooks webhook-id seen before, within its
	// window.
	ErrReplay = errors.New("the hook's webhook-id was seen before")
	// ErrEvent: the verified request names no usable event (a name
	// too long or not printable ASCII, a body that is not JSON).
	ErrEvent = errors.New("the hook names no usable event")
	// ErrConfig: a source's configuration is invalid.
	ErrConfig = errors.New("invalid hook source")
)

// Source is one configured hook source: the kind its events wake, how it
// signs, its secret and its fallback cadence.
type Source struct {
	// Kind is the kind whose wake export maps the source's events to
	// partition keys.
	Kind string `yaml:"kind"`
	// Scheme is abi.SourceGitHub, abi.SourceGitea or abi.SourceStandard.
	Scheme string `yaml:"scheme"`
	// Secret signs the source's requests: any string of at least
	// MinSecret bytes for GitHub and Gitea, a whsec_ secret for Standard
	// Webhooks. Never logged.
	Secret string `yaml:"secret"`
	// Tolerance bounds how far a Standard Webhooks timestamp may be from
	// now (webhooks.DefaultTolerance when zero).
	Tolerance time.Duration `yaml:"tolerance"`
	// ReplayIDs bounds the webhook-ids remembered (DefaultReplayIDs when
	// zero).
	ReplayIDs int `yaml:"replay_ids"`
	// Fallback is the cadence of the kind's watches whose every was left
	// to the default (DefaultFallback when zero).
	Fallback time.Duration `yaml:"fallback"`
}

func (s Source) tolerance() time.Duration {
	if s.Tolerance <= 0 {
		return webhooks.DefaultTolerance
	}
	return s.Tolerance
}

func (s Source) replayIDs() int {
	if s.ReplayIDs <= 0 {
		return DefaultReplayIDs
	}
	return s.ReplayIDs
}

// FallbackCadence is the source's fallback cadence, its default applied.
func (s Source) FallbackCadence() time.Duration {
	if s.Fallback <= 0 {
		return DefaultFallback
	}
	return s.Fallback
}

// Config is every hook source by name (the {source} of the route).
type Config map[string]Source

var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Validate checks every source; the error names each that is invalid,
// never with its secret.
func (c Config) Validate() error {
	names := make([]string, 0, len(c))
	for n := range c {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	bad := func(name, why string) {
		errs = append(errs, fmt.Errorf("hooks.%s: %s: %w", name, why, ErrConfig))
	}
	for _, n := range names {
		s := c[n]
		if !sourceName.MatchString(n) {
			bad(n, "a source's name is 1 to 64 of [a-z0-9_-], starting with a letter or digit")
		}
		if s.Kind == "" {
			bad(n, "kind is required")
		}
		switch s.Scheme {
		case abi.SourceGitHub, abi.SourceGitea:
			if len(s.Secret) < MinSecret {
				bad(n, fmt.Sprintf("the secret is shorter than %d bytes", MinSecret))
			}
		case abi.SourceStandard:
			if _, err := webhooks.ParseSecret(s.Secret); err != nil {
				bad(n, "the secret is not a whsec_ secret")
			}
		default:
			bad(n, fmt.Sprintf("scheme %q is not one of %s", s.Scheme, strings.Join(abi.KnownSources(), ", ")))
		}
		if s.Tolerance < 0 || s.Fallback < 0 || s.ReplayIDs < 0 {
			bad(n, "tolerance, fallback and replay_ids are not negative")
		}
		if s.Fallback > 0 && s.Fallback < time.Second {
			bad(n, "fallback is at least 1s")
		}
	}
	return errors.Join(errs...)
}

// Event is a verified request: its source, its name and its body.
type Event struct {
	Source string // the source's name
	Kind   string
	Wake   abi.WakeRequest
}

// Sources holds the configuration in force and each Standard Webhooks
// source's replay window. Safe for concurrent use.
type Sources struct {
	mu      sync.Mutex // guards cfg and seen
	cfg     Config
	seen    map[string]*window
	metrics Counters
}

// Counters are the verification's counts, read by /metrics.
type Counters struct {
	Verified   uint64
	Unverified uint64
	Replayed   uint64
	// Forgotten counts webhook-ids a full replay window let go of
	// before their time.
	Forgotten uint64
}

// NewSources returns Sources holding cfg, which must have passed Validate.
func NewSources(cfg Config) *Sources {
	s := &Sources{}
	s.Set(cfg)
	return s
}

// Set puts cfg in force (SIGHUP). A source whose scheme and secret are
// unchanged keeps its replay window.
func (s *Sources) Set(cfg Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]*window, len(cfg))
	for n, src := range cfg {
		if src.Scheme != abi.SourceStandard {
			continue
		}
		if old, ok := s.cfg[n]; ok && old.Scheme == src.Scheme && old.Secret == src.Secret && s.seen[n] != nil {
			w := s.seen[n]
			w.max = src.replayIDs()
			seen[n] = w
			continue
		}
		seen[n] = newWindow(src.replayIDs())
	}
	s.cfg, s.seen = cfg, seen
}

// Source returns the source named name.
func (s *Sources) Source(name string) (Source, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.cfg[name]
	return src, ok
}

// Fallbacks returns each hooked kind's fallback cadence (the shortest,
// when several sources wake one kind).
func (s *Sources) Fallbacks() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Duration, len(s.cfg))
	for _, src := range s.cfg {
		f := src.FallbackCadence()
		if cur, ok := out[src.Kind]; !ok || f < cur {
			out[src.Kind] = f
		}
	}
	return out
}

// Counts returns the counters.
func (s *Sources) Counts() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metrics
}

// Verify checks a request to the source named name, h its headers and
// body its raw bytes, before anything else is read from it: the error is
// ErrUnknownSource, ErrUnverified (counted), ErrReplay (counted) or
// ErrEvent, each wrapped.
func (s *Sources) Verify(name string, h http.Header, body []byte, now time.Time) (Event, error) {
	src, ok := s.Source(name)
	if !ok {
		return Event{}, fmt.Errorf("%q: %w", name, ErrUnknownSource)
	}
	var event string
	var err error
	switch src.Scheme {
	case abi.SourceGitHub:
		err = verifyGitHub(src.Secret, h, body)
		event, _ = one(h, HeaderGitHubEvent)
	case abi.SourceGitea:
		err = verifyGitea(src.Secret, h, body)
		event, _ = one(h, HeaderGiteaEvent)
	case abi.SourceStandard:
		err = webhooks.Verify(src.Secret, h, body, now, src.tolerance())
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrUnverified, err)
		}
	default:
		err = fmt.Errorf("scheme %q: %w", src.Scheme, ErrUnverified)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.metrics.Unverified++
		return Event{}, err
	}
	if src.Scheme == abi.SourceStandard {
		// Verified, so the headers are there and well formed.
		id, _ := one(h, webhooks.HeaderID)
		tsText, _ := one(h, webhooks.HeaderTimestamp)
		sec, _ := unixOf(tsText)
		ts := time.Unix(sec, 0)
		w := s.seen[name]
		if w == nil { // a source set without Set: cannot happen, but never panic
			w = newWindow(src.replayIDs())
			s.seen[name] = w
		}
		fresh, forgot := w.add(id, ts.Add(src.tolerance()), now)
		s.metrics.Forgotten += uint64(forgot)
		if !fresh {
			s.metrics.Replayed++
			return Event{}, fmt.Errorf("webhook-id %q: %w", id, ErrReplay)
		}
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(body, &p) == nil {
			event = p.Type
		}
	}
	s.metrics.Verified++
	if len(event) > abi.MaxWakeEvent || strings.ContainsFunc(event, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return Event{}, fmt.Errorf("the event's name is longer than %d bytes or not printable ASCII: %w", abi.MaxWakeEvent, ErrEvent)
	}
	if !json.Valid(body) {
		return Event{}, fmt.Errorf("the body is not JSON: %w", ErrEvent)
	}
	return Event{Source: name, Kind: src.Kind, Wake: abi.WakeRequest{Event: event, Source: src.Scheme, Body: bytes.Clone(body)}}, nil
}

// verifyGitHub checks X-Hub-Signature-256: "sha256=" and the lower- or
// upper-case hex of HMAC-SHA256(secret, body), compared in constant time.
func verifyGitHub(secret string, h http.Header, body []byte) error {
	v, ok := one(h, HeaderGitHubSignature)
	if !ok {
		return fmt.Errorf("no single %s header: %w", HeaderGitHubSignature, ErrUnverified)
	}
	hexSig, ok := strings.CutPrefix(v, "sha256=")
	if !ok {
		return fmt.Errorf("%s does not start sha256=: %w", HeaderGitHubSignature, ErrUnverified)
	}
	return checkHex(secret, hexSig, body)
}

// verifyGitea checks X-Gitea-Signature: the hex of HMAC-SHA256(secret,
// body), compared in constant time.
func verifyGitea(secret string, h http.Header, body []byte) error {
	v, ok := one(h, HeaderGiteaSignature)
	if !ok {
		return fmt.Errorf("no single %s header: %w", HeaderGiteaSignature, ErrUnverified)
	}
	return checkHex(secret, v, body)
}

func checkHex(secret, hexSig string, body []byte) error {
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return fmt.Errorf("the signature is not 64 hex digits: %w", ErrUnverified)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("the signature does not match: %w", ErrUnverified)
	}
	return nil
}

// one is a header present exactly once, under any spelling of its name.
func one(h http.Header, name string) (string, bool) {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	if len(out) != 1 || out[0] == "" {
		return "", false
	}
	return out[0], true
}

func unixOf(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// SignGitHub returns the X-Hub-Signature-256 value of body: for tests,
// fixtures and the docs' examples.
func SignGitHub(secret string, body []byte) string {
	return "sha256=" + SignGitea(secret, body)
}

// SignGitea returns the X-Gitea-Signature value of body.
func SignGitea(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}
