package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Streams and event types on the event log.
const (
	StreamFacts       = "fetch"
	StreamDeadLetters = "fetch.dead_letters"

	TypeSucceeded  = "fetch.succeeded"
	TypeFailed     = "fetch.failed"
	TypeDeadLetter = "fetch.dead_letter"
)

// succeededFact is the payload of a fetch.succeeded fact, keyed by command_id.
type succeededFact struct {
	occasion
	Status      int       `json:"status"`
	Fingerprint string    `json:"fingerprint"`
	Bytes       int       `json:"bytes"`
	NotModified bool      `json:"not_modified"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// failedFact is the payload of a fetch.failed fact, keyed by
// command_id:occurred_at, and of a dead letter, keyed by command_id.
// Status is set for http_status only.
type failedFact struct {
	occasion
	Reason     string    `json:"reason"`
	Message    string    `json:"message"`
	Status     int       `json:"status,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// deadLettered reports whether a failure of this reason goes to the dead
// letters as well: the refusals, which re-issuing the same command meets
// again, however often.
func deadLettered(reason string) bool {
	switch reason {
	case abi.FetchInvalidRequestOptions, abi.FetchNotGranted, abi.FetchDestinationRefused:
		return true
	}
	return false
}

// occasion is what every fact of one command shares, and what its log
// lines name: header names, never values; the secret by name.
type occasion struct {
	ID          string   `json:"command_id"`
	Kind        string   `json:"kind"`
	Method      string   `json:"method"`
	URL         string   `json:"url"`
	HeaderNames []string `json:"header_names"`
	Secret      string   `json:"secret,omitempty"`
}

// attrs are the occasion as slog attributes.
func (o occasion) attrs(more ...any) []any {
	return append([]any{"command_id", o.ID, "kind", o.Kind, "method", o.Method, "url", o.URL, "header_names", o.HeaderNames}, more...)
}

// occasionOf describes a command that passed Screen.
func occasionOf(id, kind string, cmd Command) occasion {
	return withNames(occasion{ID: id, Kind: kind, Method: cmd.Method, URL: cmd.URL.String(), HeaderNames: cmd.HeaderNames(), Secret: cmd.Secret})
}

// rawOccasion describes a refused request from what the plugin sent: the
// header names as sent (sorted, each bounded), never their values, and the
// URL without credentials.
func rawOccasion(id, kind string, req abi.FetchRequest) occasion {
	names := make([]string, 0, min(len(req.Headers), MaxHeaders+1))
	for name := range req.Headers {
		names = append(names, clip(strings.ToValidUTF8(name, "\uFFFD")))
	}
	slices.Sort(names)
	if len(names) > MaxHeaders+1 {
		names = names[:MaxHeaders+1]
	}
	return withNames(occasion{ID: id, Kind: kind, Method: clip(req.Method), URL: displayURL(req.URL), HeaderNames: names, Secret: clip(req.Secret)})
}

// displayURL is raw as a fact may carry it: userinfo replaced, bounded.
func displayURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "(an unparseable URL, not shown: it may carry credentials)"
		}
		return clipN(strings.ToValidUTF8(raw, "\uFFFD"), 2048)
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	return clipN(u.String(), 2048)
}

func clipN(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// withNames makes no header names an empty list, never JSON null.
func withNames(o occasion) occasion {
	if o.HeaderNames == nil {
		o.HeaderNames = []string{}
	}
	return o
}

// recordSuccess writes a fetch.succeeded fact.
func (i *Issuer) recordSuccess(ctx context.Context, o occasion, at time.Time, r abi.FetchResponse) {
	i.appendEvent(ctx, store.Event{Stream: StreamFacts, Key: o.ID, Type: TypeSucceeded, OccurredAt: at, Actor: o.Kind},
		succeededFact{occasion: o, Status: r.Status, Fingerprint: r.Fingerprint, Bytes: len(r.Body), NotModified: r.NotModified, OccurredAt: at.UTC()})
}

// recordFailure writes a fetch.failed fact and, for a refusal, a dead
// letter.
func (i *Issuer) recordFailure(ctx context.Context, o occasion, at time.Time, e *Error, status int) {
	at = at.UTC()
	fact := failedFact{occasion: o, Reason: e.Reason, Message: e.Message, Status: status, OccurredAt: at}
	i.appendEvent(ctx, store.Event{Stream: StreamFacts, Key: o.ID + ":" + at.Format(time.RFC3339Nano), Type: TypeFailed, OccurredAt: at, Actor: o.Kind}, fact)
	if deadLettered(e.Reason) {
		i.appendEvent(ctx, store.Event{Stream: StreamDeadLetters, Key: o.ID, Type: TypeDeadLetter, OccurredAt: at, Actor: o.Kind}, fact)
	}
}

// appendEvent writes one event. A failure is logged and never fails the
// fetch; the log line names the event, never a header value.
//
// An event is a record of what was done, not an answer the host owes, so
// it is written with a client's margin (store.ClientWrite): on a disk
// nearly full it is refused with the clients' writes, and the room the
// store keeps above its reserve for the host goes to the settlements and
// mail of the watches already acknowledged, which every probe's facts
// would otherwise spend. A disk that refuses events is said once, and
// once more when they are recorded again, not once per fetch.
func (i *Issuer) appendEvent(ctx context.Context, e store.Event, payload any) {
	if i.cfg.Log == nil {
		return
	}
	b, err := json.Marshal(payload)
	if err == nil {
		e.Payload = b
		_, _, err = i.cfg.Log.AppendEvent(store.ClientWrite(context.WithoutCancel(ctx)), e)
	}
	switch {
	case errors.Is(err, store.ErrStorageFull):
		if i.eventsRefused.CompareAndSwap(false, true) {
			i.log.Warn("fetch: facts and dead letters are not recorded while the store's disk is full; fetches go on", "stream", e.Stream, "err", err)
		}
	case err != nil:
		i.log.Warn("fetch: event not recorded", "stream", e.Stream, "type", e.Type, "key", e.Key, "err", err)
	case i.eventsRefused.CompareAndSwap(true, false):
		i.log.Info("fetch: facts and dead letters are recorded again", "stream", e.Stream)
	}
}

// DeadLetters reads the refused commands after sequence number after,
// oldest first, at most limit (1-1000; 100 when not positive). With no
// event log there are none; an event log that cannot be read back is
// ErrNoReader.
func (i *Issuer) DeadLetters(ctx context.Context, after uint64, limit int) ([]api.DeadLetter, error) {
	if i.cfg.Log == nil {
		return nil, nil
	}
	r, ok := i.cfg.Log.(EventReader)
	if !ok {
		return nil, ErrNoReader
	}
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	evs, err := r.ReadEvents(ctx, StreamDeadLetters, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.DeadLetter, 0, len(evs))
	for _, e := range evs {
		var p failedFact
		if e.Type != TypeDeadLetter || json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		out = append(out, api.DeadLetter{Seq: e.Seq, CommandID: p.ID, Kind: p.Kind, Method: p.Method, URL: p.URL,
			Reason: p.Reason, Message: p.Message, HeaderNames: p.HeaderNames, OccurredAt: p.OccurredAt})
	}
	return out, nil
}
