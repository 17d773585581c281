package fetch

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Defaults of Config.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMinInterval   = time.Second
	DefaultQuietPeriod   = 30 * time.Minute
	DefaultMaxBody       = 1 << 20
	DefaultMaxRedirects  = 5
	DefaultUserAgent     = "vigil"
	DefaultMaxCacheBytes = 64 << 20
	// DefaultMaxFetchTime bounds a whole fetch when Config.MaxFetchTime
	// is not set (or MaxTimeout, when that is longer).
	DefaultMaxFetchTime = 120 * time.Second
)

// EventLog is where facts and dead letters go; the host's store
// (*store.Store) is one.
type EventLog interface {
	AppendEvent(ctx context.Context, e store.Event) (store.Event, bool, error)
}

// EventReader reads a stream back; the host's store is one. DeadLetters needs
// the Config's Log to be one.
type EventReader interface {
	ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error)
}

// Metrics hears of the issuer's trade-offs; *metrics.Metrics is one.
type Metrics interface {
	// FetchNotHeld is one origin result the cache could not keep without
	// dropping a fresh one: the next read of its resource goes to the
	// origin again.
	FetchNotHeld()
}

type nopMetrics struct{}

func (nopMetrics) FetchNotHeld() {}

// Config configures an Issuer. Zero fields take the defaults.
type Config struct {
	// MaxTimeout caps a command's timeout_seconds (default 120 s).
	MaxTimeout time.Duration
	// DefaultTimeout applies when timeout_seconds is absent (default 30 s).
	// A command's timeout bounds each operation of its fetch, not the
	// whole: the resolve, the connect (with TLS), the wait for the answer's
	// headers, each read of the body.
	DefaultTimeout time.Duration
	// MaxFetchTime bounds a whole fetch, from its resolve to its last byte
	// (default 120 s, or MaxTimeout when that is longer; never less than
	// MaxTimeout). A fetch past it is a timeout failure, which a plugin
	// answers as "cannot tell", never a refusal. Everything is also
	// bounded by the caller's context, the plugin call's own timeout.
	MaxFetchTime time.Duration
	// MinInterval is both the least time between two requests to one
	// origin and the shortest time a resource's result is held (default
	// 1 s); a watch whose cadence is longer is served a result younger
	// than its cadence (plugin.FetchCall.Every).
	MinInterval time.Duration
	// QuietPeriod without a 429 or 503 resets an origin's raised interval
	// (default 30 min).
	QuietPeriod time.Duration
	// MaxBody bounds a response body; a longer one is too_large (default
	// 1 MiB).
	MaxBody int64
	// MaxRedirects bounds the redirects one fetch follows (default 5).
	MaxRedirects int
	// UserAgent is the user-agent sent unless a command sets its own
	// (default "vigil").
	UserAgent string
	// Secrets maps a secret's name to its value. A command naming a secret
	// its kind is granted gets "authorization: Bearer <value>". The map is
	// copied.
	Secrets map[string]string
	// MaxCacheBytes bounds what the issuer keeps of held results and
	// stored responses (default 64 MiB; at least MaxBody). A fresh result
	// is never dropped to make room: when the cache is full of them, a new
	// result is not held, and Metrics hears of it.
	MaxCacheBytes int64
	// Metrics counts what the issuer could not hold (nil: nothing).
	Metrics Metrics
	// Clock is the issuer's time (default the wall clock): Now for every
	// decision, Sleep for the one place it waits (pacing), AfterFunc for
	// the bounds of a fetch. Now must be wall-clock time when callers
	// pass contexts with deadlines, since a deadline is compared with it.
	Clock clock.Clock
	// Resolver answers every name lookup of the issuer: the check before
	// a request and the dial itself (default net.DefaultResolver).
	Resolver netguard.Resolver
	// Log receives the facts ("fetch") and dead letters
	// ("fetch.dead_letters"). Nil records nothing.
	Log    EventLog
	Logger *slog.Logger
	// IDs is the randomness of command ids (default crypto/rand).
	IDs io.Reader
}

// withDefaults fills zero fields and refuses values that cannot work.
func (c Config) withDefaults() (Config, error) {
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = min(DefaultTimeout, c.MaxTimeout)
	}
	if c.MaxFetchTime <= 0 {
		c.MaxFetchTime = max(DefaultMaxFetchTime, c.MaxTimeout)
	}
	if c.MinInterval <= 0 {
		c.MinInterval = DefaultMinInterval
	}
	if c.QuietPeriod <= 0 {
		c.QuietPeriod = DefaultQuietPeriod
	}
	if c.MaxBody <= 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxRedirects <= 0 {
		c.MaxRedirects = DefaultMaxRedirects
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	if c.MaxCacheBytes <= 0 {
		c.MaxCacheBytes = max(DefaultMaxCacheBytes, c.MaxBody)
	}
	c.Clock = clock.Or(c.Clock)
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.IDs == nil {
		c.IDs = rand.Reader
	}
	c.Secrets = maps.Clone(c.Secrets)

	var errs []error
	if c.DefaultTimeout > c.MaxTimeout {
		errs = append(errs, fmt.Errorf("fetch: DefaultTimeout %s is over MaxTimeout %s", c.DefaultTimeout, c.MaxTimeout))
	}
	if c.MaxFetchTime < c.MaxTimeout {
		errs = append(errs, fmt.Errorf("fetch: MaxFetchTime %s is under MaxTimeout %s: one operation could outlast the whole fetch", c.MaxFetchTime, c.MaxTimeout))
	}
	if c.MaxTimeout < minTimeout {
		errs = append(errs, fmt.Errorf("fetch: MaxTimeout %s: at least %s", c.MaxTimeout, minTimeout))
	}
	if c.MaxCacheBytes < c.MaxBody {
		errs = append(errs, fmt.Errorf("fetch: MaxCacheBytes %d is under MaxBody %d: a body at the cap could never be held", c.MaxCacheBytes, c.MaxBody))
	}
	if v := trimOWS(c.UserAgent); v != c.UserAgent || !sendable(v) {
		errs = append(errs, errors.New("fetch: UserAgent: printable ASCII without surrounding whitespace only"))
	}
	for name, v := range c.Secrets {
		if err := abi.CheckSecretName(name); err != nil {
			errs = append(errs, fmt.Errorf("fetch: Secrets: %w", err))
		}
		// The value is never quoted: only its name.
		if v == "" || trimOWS(v) != v || !sendable(v) {
			errs = append(errs, fmt.Errorf("fetch: secret %q: its value is empty or has a byte outside printable ASCII", name))
		}
	}
	return c, errors.Join(errs...)
}
