package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/vigilhq/vigil/api"
)

// Retry bounds how a creating call (CreateWatch, Record, ClaimWork,
// CompleteWork, ReportPhase, ReportActivity) is sent again. Each such
// call carries an Idempotency-Key of 128 random bits, the same on every
// attempt, so the host writes it at most once however often it is sent,
// and answers a repeat of a written one with its first answer. It is
// sent again after an answer it may have missed (the connection failed
// or timed out before the answer came) and after a 503 store_unavailable
// or store_busy, waiting the answer's Retry-After, else a backoff that
// doubles from Backoff with jitter; at most Attempts times in all, and
// never once Within has passed since the first (a wait that would end
// past it is not waited). The caller's context ends the retries at once.
type Retry struct {
	Attempts int
	Within   time.Duration
	Backoff  time.Duration
}

// DefaultRetry is the retry of a new Client: 5 attempts within 30 s, from
// a 250 ms backoff.
var DefaultRetry = Retry{Attempts: 5, Within: 30 * time.Second, Backoff: 250 * time.Millisecond}

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

// create makes a creating call under a fresh idempotency key, sent again
// as c.retry says.
func (c *Client) create(ctx context.Context, method, path string, in, out any) error {
	key := NewIdempotencyKey()
	began := time.Now()
	for attempt := 1; ; attempt++ {
		err := c.doKeyed(ctx, method, path, nil, in, out, key)
		after, again := retryable(ctx, err)
		if !again || attempt >= c.retry.Attempts {
			return err
		}
		wait := after
		if wait <= 0 {
			wait = backoff(c.retry.Backoff, attempt)
		}
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
	var ae *api.Error
	switch {
	case err == nil || ctx.Err() != nil:
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

// backoff is the wait before attempt+1: base doubled attempt-1 times,
// taken at random from its upper half, so clients that failed together
// do not come back together.
func backoff(base time.Duration, attempt int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := base << min(attempt-1, 8)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
