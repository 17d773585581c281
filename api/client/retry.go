package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/vigilhq/vigil/api"
)

// Retry bounds how a creating call (CreateWatch, Record, ClaimWork,
// CompleteWork, ReportPhase, ReportActivity) is sent again. Each such
// call carries an Idempotency-Key of 128 random bits, the same on every
// attempt, so the host writes it at most once however often it is sent,
// and answers a repeat of a written one with its first answer. It is
// sent again after an answer it may have missed (the connection failed
// or timed out before the answer came, or a gateway in front of the host
// answered 502, 503 or 504 in its own words) and after a 503
// store_unavailable or store_busy, waiting a backoff that doubles from Backoff (with
// jitter, up to 8 s), or the answer's Retry-After when that is longer;
// at most Attempts times in all, and never once Within has passed since
// the first (a wait that would end past it is not waited). The caller's
// context ends the retries at once.
type Retry struct {
	Attempts int
	Within   time.Duration
	Backoff  time.Duration
}

// DefaultRetry is the retry of a new Client: within 30 s, at most 8
// attempts, from a 500 ms backoff. A store that answers at once that it
// is unavailable (Retry-After 2 s) is asked at about 0, 2, 4, 6, 10, 18
// and 26 s: through an election (a few seconds) and a quorum loss of
// about 20 s.
var DefaultRetry = Retry{Attempts: 8, Within: 30 * time.Second, Backoff: 500 * time.Millisecond}

// WithRetry sets how creating calls are sent again; Attempts 1 sends each
// once (with its key still).
func WithRetry(r Retry) Option {
	return func(c *Client) {
		if r.Attempts < 1 {
			r.Attempts = 1
		}
		c.retry = r
	}
}

// NewIdempotencyKey is a fresh idempotency key: 128 random bits as 32
// hex digits.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// idemKeyContext is the context key WithIdempotencyKey sets.
type idemKeyContext struct{}

// WithIdempotencyKey returns ctx carrying key, the caller's own key for
// the creating call made under ctx: it is sent under key rather than a
// fresh one. A caller that lost a call's answer (an MCP client whose
// tool call went unanswered) makes the same call again under the same
// key and is answered the first answer, with nothing written twice. A
// key that is not api.ValidIdempotencyKey is refused before anything is
// sent, as 400 invalid_idempotency_key.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKeyContext{}, key)
}

// create makes a creating call under the caller's key (WithIdempotencyKey)
// or a fresh one, sent again as c.retry says.
func (c *Client) create(ctx context.Context, method, path string, in, out any) error {
	key, given := ctx.Value(idemKeyContext{}).(string)
	switch {
	case !given:
		key = NewIdempotencyKey()
	case !api.ValidIdempotencyKey(key):
		return &api.Error{Code: api.CodeInvalidIdempotencyKey, Field: api.HeaderIdempotencyKey,
			Message: fmt.Sprintf("want 1 to %d bytes of visible ASCII", api.MaxIdempotencyKey)}
	}
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err := c.doKeyed(ctx, method, path, nil, in, out, key)
		after, again := retryable(ctx, err)
		if !again || attempt >= c.retry.Attempts {
			return err
		}
		wait := max(after, backoff(c.retry.Backoff, attempt))
		if time.Since(began)+wait > c.retry.Within {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// retryable says whether a creating call that answered err may be sent
// again under its key, and how long the host asked to wait first.
func retryable(ctx context.Context, err error) (after time.Duration, again bool) {
	var (
		ae   *api.Error
		bare *bareAnswer
	)
	switch {
	case err == nil || ctx.Err() != nil:
		return 0, false
	case errors.As(err, &bare):
		// A gateway's 502, 503 or 504 in its own words: the host's answer
		// never reached it, so the request may or may not have been
		// written, as with an answer lost on the way. Any other bare
		// answer is returned as it came.
		switch bare.status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return 0, true
		}
		return 0, false
	case errors.As(err, &ae):
		// Only the store's own "not now": anything else the host
		// answered is its answer.
		return ae.RetryAfter, ae.Code == api.CodeStoreUnavailable || ae.Code == api.CodeStoreBusy
	case errors.Is(err, errRequest):
		return 0, false // never sent, and never sendable
	}
	// No answer, or an answer cut short: the request may or may not have
	// been written, and its key makes sending it again safe.
	return 0, true
}

// maxBackoff caps backoff.
const maxBackoff = 8 * time.Second

// backoff is the wait before attempt+1: base doubled attempt-1 times (at
// most maxBackoff), taken at random from its upper half, so clients that
// failed together do not come back together.
func backoff(base time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := min(base<<min(attempt-1, 16), maxBackoff)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
