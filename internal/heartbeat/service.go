package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/store"
)

// PingStore is what a ping writes through: the token's record, and the
// ping on the recipient's record.
type PingStore interface {
	GetToken(ctx context.Context, hash string) (store.TokenRecord, error)
	Ping(ctx context.Context, id, name string, at time.Time, failed bool, note string) (store.RecipientRecord, error)
}

// Poker makes the pending watches of a subject due now
// (scheduler.Scheduler.Poke).
type Poker interface {
	Poke(ctx context.Context, subject string) (int, error)
}

// Service takes a heartbeat's pings.
type Service struct {
	st    PingStore
	poke  Poker
	clock clock.Clock
}

// NewService is the service over st, waking the heartbeat's watch
// through poke.
func NewService(st PingStore, poke Poker, clk clock.Clock) *Service {
	return &Service{st: st, poke: poke, clock: clock.Or(clk)}
}

// Pinged is a ping as it was recorded.
type Pinged struct {
	Recipient string
	Heartbeat store.Heartbeat
}

// NotFound is the answer for a ping URL that names no heartbeat:
// malformed, unknown, or no longer declared alike.
func NotFound() *api.Error {
	return &api.Error{Code: api.CodeNotFound, Message: "no heartbeat at this URL (it is wrong, or the heartbeat is no longer declared)"}
}

// Ping records a ping of the heartbeat token names (a failure's, with
// note, when failed), one write on its recipient's record, and makes its
// watch due now, so a missed one recovers (or a failure is mailed) at
// once.
func (s *Service) Ping(ctx context.Context, token string, failed bool, note string) (Pinged, error) {
	if _, err := captoken.Parse(token); err != nil {
		return Pinged{}, NotFound()
	}
	if len(note) > MaxNote {
		return Pinged{}, &api.Error{Code: api.CodeBodyTooLarge, Message: fmt.Sprintf("a ping's body is at most %d bytes", MaxNote)}
	}
	note = strings.ToValidUTF8(note, "\uFFFD")
	tr, err := s.st.GetToken(ctx, store.HashToken(token))
	if errors.Is(err, store.ErrNotFound) || err == nil && tr.Heartbeat == "" {
		return Pinged{}, NotFound()
	}
	if err != nil {
		return Pinged{}, err
	}
	rec, err := s.st.Ping(ctx, tr.Recipient, tr.Heartbeat, s.clock.Now(), failed, note)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnknownHeartbeat) {
		return Pinged{}, NotFound()
	}
	if err != nil {
		return Pinged{}, err
	}
	// The ping is written: a poke lost here (a node's restart) leaves the
	// watch to its due time, which the check then reads afresh.
	_, _ = s.poke.Poke(ctx, Subject(tr.Recipient, tr.Heartbeat))
	out := Pinged{Recipient: rec.ID}
	for _, h := range rec.Heartbeats {
		if h.Name == tr.Heartbeat {
			out.Heartbeat = h
		}
	}
	return out, nil
}
