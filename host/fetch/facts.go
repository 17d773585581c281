package fetch

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/abi"
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

// DeadLetter is one refused command as DeadLetters reads it back.
type DeadLetter = api.DeadLetter

// succeededFact is the payload of a fetch.succeeded fact, keyed by command_id.
type succeededFact struct {
	CommandID   string    `json:"command_id"`
	Kind        string    `json:"kind"`
	Method      string    `json:"method"`
	URL         string    `json:"url"`
	Status      int       `json:"status"`
	Fingerprint string    `json:"fingerprint"`
	Bytes       int       `json:"bytes"`
	NotModified bool      `json:"not_modified"`
	HeaderNames []string  `json:"header_names"`
	Secret      string    `json:"secret,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// failedFact is the payload of a fetch.failed fact, keyed by
// command_id:occurred_at. Status is set for http_status only.
type failedFact struct {
	CommandID   string    `json:"command_id"`
	Kind        string    `json:"kind"`
	Method      string    `json:"method"`
	URL         string    `json:"url"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	Status      int       `json:"status,omitempty"`
	HeaderNames []string  `json:"header_names"`
	Secret      string    `json:"secret,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// deadLetter is the payload of a dead letter, keyed by command_id.
type deadLetter struct {
	CommandID   string    `json:"command_id"`
	Kind        string    `json:"kind"`
	Method      string    `json:"method"`
	URL         string    `json:"url"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	HeaderNames []string  `json:"header_names"`
	OccurredAt  time.Time `json:"occurred_at"`
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

// occasion is what every fact of one command shares.
type occasion struct {
	id          string
	kind        string
	method      string
	url         string
	headerNames []string
	secret      string
}

// occasionOf describes a command that passed Screen.
func occasionOf(id, kind string, cmd Command) occasion {
	return occasion{id: id, kind: kind, method: cmd.Method, url: cmd.URL.String(), headerNames: cmd.HeaderNames(), secret: cmd.Secret}
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
	return occasion{id: id, kind: kind, method: clip(req.Method), url: displayURL(req.URL), headerNames: names, secret: clip(req.Secret)}
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

func (o occasion) names() []string {
	if o.headerNames == nil {
		return []string{}
	}
	return o.headerNames
}

// recordSuccess writes a fetch.succeeded fact.
func (i *Issuer) recordSuccess(ctx context.Context, o occasion, at time.Time, r abi.FetchResponse) {
	i.appendEvent(ctx, store.Event{Stream: StreamFacts, Key: o.id, Type: TypeSucceeded, OccurredAt: at, Actor: o.kind},
		succeededFact{CommandID: o.id, Kind: o.kind, Method: o.method, URL: o.url, Status: r.Status, Fingerprint: r.Fingerprint,
			Bytes: len(r.Body), NotModified: r.NotModified, HeaderNames: o.names(), Secret: o.secret, OccurredAt: at.UTC()})
}

// recordFailure writes a fetch.failed fact and, for a refusal, a dead
// letter.
func (i *Issuer) recordFailure(ctx context.Context, o occasion, at time.Time, e *Error, status int) {
	at = at.UTC()
	i.appendEvent(ctx, store.Event{Stream: StreamFacts, Key: o.id + ":" + at.Format(time.RFC3339Nano), Type: TypeFailed, OccurredAt: at, Actor: o.kind},
		failedFact{CommandID: o.id, Kind: o.kind, Method: o.method, URL: o.url, Reason: e.Reason, Message: e.Message, Status: status,
			HeaderNames: o.names(), Secret: o.secret, OccurredAt: at})
	if deadLettered(e.Reason) {
		i.appendEvent(ctx, store.Event{Stream: StreamDeadLetters, Key: o.id, Type: TypeDeadLetter, OccurredAt: at, Actor: o.kind},
			deadLetter{CommandID: o.id, Kind: o.kind, Method: o.method, URL: o.url, Reason: e.Reason, Message: e.Message,
				HeaderNames: o.names(), OccurredAt: at})
	}
}

// appendEvent writes one event. A failure is logged and never fails the
// fetch; the log line names the event, never a header value.
func (i *Issuer) appendEvent(ctx context.Context, e store.Event, payload any) {
	if i.cfg.Log == nil {
		return
	}
	b, err := json.Marshal(payload)
	if err == nil {
		e.Payload = b
		_, _, err = i.cfg.Log.AppendEvent(context.WithoutCancel(ctx), e)
	}
	if err != nil {
		i.log.Warn("fetch: event not recorded", "stream", e.Stream, "type", e.Type, "key", e.Key, "err", err)
	}
}

// DeadLetters reads the refused commands after sequence number after,
// oldest first, at most limit (1-1000; 100 when not positive). With no
// event log there are none; an event log that cannot be read back is
// ErrNoReader.
func (i *Issuer) DeadLetters(ctx context.Context, after uint64, limit int) ([]DeadLetter, error) {
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
	out := make([]DeadLetter, 0, len(evs))
	for _, e := range evs {
		var p deadLetter
		if e.Type != TypeDeadLetter || json.Unmarshal(e.Payload, &p) != nil {
			continue
		}
		out = append(out, DeadLetter{Seq: e.Seq, CommandID: p.CommandID, Kind: p.Kind, Method: p.Method, URL: p.URL,
			Reason: p.Reason, Message: p.Message, HeaderNames: p.HeaderNames, OccurredAt: p.OccurredAt})
	}
	return out, nil
}
