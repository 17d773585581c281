package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
)

// The tools' names.
const (
	toolRegister     = "register_watch"
	toolKinds        = "list_kinds"
	toolWait         = "wait_watch"
	toolMailbox      = "read_mailbox"
	toolShow         = "show_watch"
	toolList         = "list_watches"
	toolCancel       = "cancel_watch"
	toolRecord       = "observe_record"
	toolListWork     = "list_work"
	toolShowWork     = "show_work"
	toolClaimWork    = "claim_work"
	toolCompleteWork = "complete_work"
	toolSendSignal   = "send_signal"
)

type registerIn struct {
	Kind      string         `json:"kind" jsonschema:"the kind of watch: what it waits on (list_kinds describes each)"`
	Params    map[string]any `json:"params" jsonschema:"the kind's params, as its params_schema in list_kinds says"`
	Recipient string         `json:"recipient" jsonschema:"who the outcome wakes: your recipient id, whose mailbox gets the message"`
	Every     string         `json:"every,omitempty"`      // described by registerTool, from the host's Defaults
	ExpiresAt string         `json:"expires_at,omitempty"` // described by registerTool, from the host's Defaults
	// IdempotencyKey is the agent's own key for this registration.
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a key you choose for this registration (1 to 255 characters of visible ASCII, such as 32 random hex digits): if the call goes unanswered, call again with the same arguments and the same key, and you get the watch the first call made, never a second one"`
}

// everyText and expiresText describe register's every and expires_at,
// with the host's defaults when they are known: the numbers come from
// the host's constants, never from this package.
func everyText(d Defaults) string {
	s := "how often to check, a Go duration such as 30s; leave it out for the kind's default_every (list_kinds)"
	if d.Every > 0 {
		return s + ", or " + d.Every.String() + " for a kind that names none"
	}
	return s + ", or the host's default for a kind that names none"
}

func expiresText(d Defaults) string {
	s := "the deadline, RFC 3339; leave it out for the kind's own deadline (a timer's comes shortly after its instant; one before it is refused, since the watch could only expire)"
	if d.Deadline > 0 {
		s += ", else " + d.Deadline.String() + " from now"
	} else {
		s += ", else the host's default"
	}
	return s + "; the watch returned gives expires_at as the host resolved it"
}

func registerTool(kinds []api.Kind, d Defaults) (*mcp.Tool, error) {
	in, err := jsonschema.For[registerIn](nil)
	if err != nil {
		return nil, err
	}
	in.Properties["every"].Description = everyText(d)
	in.Properties["expires_at"].Description = expiresText(d)
	desc := "Register a watch: tell vigil what you are waiting for, then stop working and halt. vigil checks it on its own schedule and puts the outcome (or its expiry at the deadline) in the recipient's mailbox as one message; read it with read_mailbox, or wait on the watch with wait_watch. Returns the watch: its id, state (pending), every and expires_at as the host resolved them; a signal's also has signal_url, shown this once: give it to whoever answers (a person opens it in a browser; a system, or send_signal, posts to it). A kind nobody can observe on this host is refused at once (watch_unobservable, naming the setting to change)."
	if len(kinds) == 0 {
		desc += " The host's kinds are not known yet: call list_kinds."
	} else {
		names := make([]any, 0, len(kinds))
		var lines []string
		for _, k := range kinds {
			names = append(names, k.Kind)
			line := "- " + k.Kind + ": " + k.Summary
			if !k.Observable {
				line += " (not observable here: " + k.Setting + ")"
			}
			lines = append(lines, line)
		}
		in.Properties["kind"].Enum = names
		desc += " Kinds this host serves (list_kinds gives each one's params schema and an example):\n" + strings.Join(lines, "\n")
	}
	return &mcp.Tool{Name: toolRegister, Title: "Register a watch", Description: desc, InputSchema: in}, nil
}

func (s *Server) register(ctx context.Context, a API, in registerIn) (any, error) {
	params, err := json.Marshal(in.Params)
	if err != nil {
		return nil, &api.Error{Code: api.CodeInvalidField, Field: "params", Message: err.Error()}
	}
	if in.Params == nil {
		params = nil // sent as nothing: the API says what it needs
	}
	req := api.WatchRequest{Kind: in.Kind, Params: params, Recipient: api.RecipientRef{ID: in.Recipient}, Every: in.Every}
	if in.ExpiresAt != "" {
		t, err := time.Parse(time.RFC3339, in.ExpiresAt)
		if err != nil {
			return nil, &api.Error{Code: api.CodeInvalidField, Field: "expires_at", Message: "want an RFC 3339 time such as 2026-12-01T14:00:00Z"}
		}
		req.ExpiresAt = &t
	}
	if in.IdempotencyKey != "" {
		if !api.ValidIdempotencyKey(in.IdempotencyKey) {
			return nil, &api.Error{Code: api.CodeInvalidIdempotencyKey, Field: "idempotency_key", Message: fmt.Sprintf("want 1 to %d bytes of visible ASCII", api.MaxIdempotencyKey)}
		}
		ctx = client.WithIdempotencyKey(ctx, in.IdempotencyKey)
	}
	return a.CreateWatch(ctx, req)
}

type noIn struct{}

type idIn struct {
	ID string `json:"id" jsonschema:"the watch's id, as register_watch or list_watches returned it"`
}

type waitIn struct {
	ID    string `json:"id" jsonschema:"the watch's id"`
	Since string `json:"since,omitempty" jsonschema:"the version the last wait_watch returned: answer when the watch has moved on from it; leave it out on the first call"`
	Wait  string `json:"wait,omitempty" jsonschema:"how long to wait at most, a Go duration up to 60s; leave it out for 60s"`
}

// WaitResult is the wait tool's answer.
type WaitResult struct {
	// Settled is true when the watch has ended: Watch.State is fired,
	// expired, cancelled, undeliverable or unwatchable.
	Settled bool `json:"settled"`
	// Status says it in words: the outcome, or "still pending" with the
	// last observation.
	Status string `json:"status"`
	// Version is what to pass as since in the next call.
	Version string    `json:"version"`
	Watch   api.Watch `json:"watch"`
}

func (s *Server) wait(ctx context.Context, a API, in waitIn) (any, error) {
	wait, err := parseWait(in.Wait, MaxWait)
	if err != nil {
		return nil, err
	}
	since := in.Since
	if since == "" {
		// The first call waits on a change from what the watch is now.
		w, err := a.GetWatch(ctx, in.ID)
		if err != nil {
			return nil, err
		}
		if w.State != "pending" {
			return waitResult(w), nil
		}
		since = w.Version
	}
	w, err := a.WaitWatch(ctx, in.ID, since, wait)
	if err != nil {
		return nil, err
	}
	return waitResult(w), nil
}

func waitResult(w api.Watch) WaitResult {
	r := WaitResult{Settled: w.State != "pending", Version: w.Version, Watch: w}
	switch {
	case !r.Settled:
		r.Status = fmt.Sprintf("still pending after %d probes", w.Attempts)
		if w.LastNote != "" {
			r.Status += "; last observation: " + w.LastNote
		}
		if w.LastFault != nil {
			r.Status += "; last probe faulted: " + w.LastFault.Reason
		}
		r.Status += ". Call wait_watch again with since=" + w.Version + ", or halt: the outcome will be in the mailbox."
	case w.Outcome != nil:
		r.Status = w.State + ": " + w.Outcome.Result
		if w.Outcome.Summary != "" {
			r.Status += " (" + w.Outcome.Summary + ")"
		}
	default:
		r.Status = w.State
	}
	return r
}

type mailboxIn struct {
	Recipient string `json:"recipient" jsonschema:"the recipient whose mailbox to read"`
	After     uint64 `json:"after,omitempty" jsonschema:"the cursor: the next the last read returned; leave it out (or 0) to read from the start"`
	Wait      string `json:"wait,omitempty" jsonschema:"with nothing to read, wait up to this long for a message (a Go duration up to 60s); leave it out to answer at once"`
	Limit     int    `json:"limit,omitempty" jsonschema:"at most this many messages; leave it out for the host's default"`
}

func (s *Server) mailbox(ctx context.Context, a API, in mailboxIn) (any, error) {
	wait, err := parseWait(in.Wait, 0)
	if err != nil {
		return nil, err
	}
	return a.ReadMailbox(ctx, in.Recipient, in.After, wait, in.Limit)
}

// parseWait reads a tool's wait: a Go duration from 0s to MaxWait, or
// def when the agent gave none.
func parseWait(raw string, def time.Duration) (time.Duration, error) {
	if raw == "" {
		return def, nil
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 || d > MaxWait {
		return 0, &api.Error{Code: api.CodeInvalidField, Field: "wait", Message: fmt.Sprintf("want a duration from 0s to %s", MaxWait)}
	}
	return d, nil
}

type listIn struct {
	Recipient    string `json:"recipient,omitempty" jsonschema:"only the watches that wake this recipient"`
	State        string `json:"state,omitempty" jsonschema:"only watches in this state: pending, fired, expired, cancelled, undeliverable or unwatchable"`
	Kind         string `json:"kind,omitempty" jsonschema:"only watches of this kind"`
	RegisteredBy string `json:"registered_by,omitempty" jsonschema:"only the watches this principal registered"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"the next of the page before; leave it out for the first page"`
	Limit        int    `json:"limit,omitempty" jsonschema:"the page size (at most 1000); leave it out for the host's default"`
}

type recordIn struct {
	Scope    string `json:"scope" jsonschema:"the observe scope the source belongs to"`
	Item     string `json:"item" jsonschema:"the item's id in its source (a message id): with source, its identity"`
	Thread   string `json:"thread" jsonschema:"the thread the item belongs to: each thread becomes one Work"`
	Text     string `json:"text,omitempty" jsonschema:"the item's text"`
	Revision string `json:"revision,omitempty" jsonschema:"the item's revision, when it was edited"`
	Source   string `json:"source,omitempty" jsonschema:"the source's name, when the scope has more than one you report"`
	Run      string `json:"run,omitempty" jsonschema:"the run that saw the item (a scheduled job's occurrence)"`
}

type scopeIn struct {
	Scope string `json:"scope" jsonschema:"the observe scope"`
	State string `json:"state,omitempty" jsonschema:"only Work in this state: open, claimed or done"`
}

type workIn struct {
	ID string `json:"id" jsonschema:"the Work's id"`
}

type signalIn struct {
	URL     string `json:"url" jsonschema:"the signal's URL: the signal_url its registration (register_watch with kind signal) answered"`
	Outcome string `json:"outcome" jsonschema:"the answer: one of the outcomes the signal offers (approve or deny unless its registration named others)"`
	Data    any    `json:"data,omitempty" jsonschema:"data sent with the answer, any JSON value its schema admits"`
}

type claimIn struct {
	ID        string `json:"id" jsonschema:"the Work's id"`
	Recipient string `json:"recipient" jsonschema:"the recipient that takes the Work on"`
}

func (s *Server) addTools() {
	srv := s.srv
	mcp.AddTool(srv, &mcp.Tool{Name: toolKinds, Title: "List the kinds of watch",
		Description: "List every kind of watch this host serves: for each its summary, whether it is standing (no deadline, notices on each change), whether it is observable here (else the setting that would make it so), its default check interval, the JSON Schema of its params and an example. Call it before register_watch to learn what params a kind takes."},
		handler(s, func(ctx context.Context, a API, _ noIn) (any, error) {
			list, err := a.Kinds(ctx)
			if err == nil {
				s.addRegister(list.Kinds)
			}
			return list, err
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: toolWait, Title: "Wait on a watch",
		Description: "Wait on one watch for at most 60 s (or wait) and answer as soon as it changes: the outcome when it has settled (fired, expired, cancelled, undeliverable, unwatchable), or \"still pending\" with its last observation and the version to pass as since next time. Use it when you can afford to keep working on the wait for a minute; otherwise halt, and the outcome reaches your mailbox."},
		handler(s, s.wait))
	mcp.AddTool(srv, &mcp.Tool{Name: toolMailbox, Title: "Read the mailbox",
		Description: "Read a recipient's mailbox after a cursor: the messages (each a watch's outcome, an expiry, a standing watch's notice, a reminder) and next, the cursor to pass as after next time so nothing is read twice or missed. With wait, an empty mailbox waits up to that long (at most 60 s) for a message."},
		handler(s, s.mailbox))
	mcp.AddTool(srv, &mcp.Tool{Name: toolShow, Title: "Show a watch",
		Description: "Show one watch: its kind, params, recipient, state, receipt, cadence, deadline, probes so far, last observation and, once settled, its outcome."},
		handler(s, func(ctx context.Context, a API, in idIn) (any, error) { return a.GetWatch(ctx, in.ID) }))
	mcp.AddTool(srv, &mcp.Tool{Name: toolList, Title: "List watches",
		Description: "List watches, oldest first, one page at a time, filtered by recipient, state, kind or who registered them. Returns the page and next: pass it as cursor for the following page (a page may be short and still have a next)."},
		handler(s, func(ctx context.Context, a API, in listIn) (any, error) {
			return a.ListWatches(ctx, client.WatchQuery{Recipient: in.Recipient, State: in.State, Kind: in.Kind, RegisteredBy: in.RegisteredBy, After: in.Cursor, Limit: in.Limit})
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: toolCancel, Title: "Cancel a watch",
		Description: "Cancel a pending watch: it settles cancelled and mails nothing. Returns the watch. A watch that has already settled is refused (already_settled)."},
		handler(s, func(ctx context.Context, a API, in idIn) (any, error) { return a.CancelWatch(ctx, in.ID) }))
	mcp.AddTool(srv, &mcp.Tool{Name: toolRecord, Title: "Record an observed item",
		Description: "Record an item you saw in an outside source of a scope (a message in a support channel): vigil routes its thread to one Work, and a watch of kind observe.thread on that Work wakes on the next item. An exact repeat answers duplicate and costs nothing. Returns the event and the thread's key."},
		handler(s, func(ctx context.Context, a API, in recordIn) (any, error) {
			return a.Record(ctx, in.Scope, api.ObserveRequest{Item: in.Item, Thread: in.Thread, Text: in.Text, Revision: in.Revision, Source: in.Source, Run: in.Run})
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: toolListWork, Title: "List a scope's Work",
		Description: "List the Work of an observe scope (one per observed thread), optionally only open, claimed or done ones."},
		handler(s, func(ctx context.Context, a API, in scopeIn) (any, error) { return a.ListWork(ctx, in.Scope, in.State) }))
	mcp.AddTool(srv, &mcp.Tool{Name: toolShowWork, Title: "Show a Work",
		Description: "Show one Work with its inputs: the items routed to it, numbered from 1."},
		handler(s, func(ctx context.Context, a API, in workIn) (any, error) { return a.GetWork(ctx, in.ID) }))
	mcp.AddTool(srv, &mcp.Tool{Name: toolClaimWork, Title: "Claim a Work",
		Description: "Claim an open Work for a recipient and get it with its inputs. Then register an observe.thread watch on it to be woken by the thread's next item. A Work claimed by another is refused (work_conflict)."},
		handler(s, func(ctx context.Context, a API, in claimIn) (any, error) {
			return a.ClaimWork(ctx, in.ID, in.Recipient)
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: toolSendSignal, Title: "Answer a signal",
		Description: "Answer a signal through its URL (a register_watch of kind signal answers one as signal_url, once): its watch fires with the outcome and data, mailed to the signal's recipient. No bearer token is needed or sent: the URL is the capability. A signal already answered, expired or cancelled is refused (already_settled) with the signal as it settled, the first answer's outcome."},
		handler(s, func(ctx context.Context, a API, in signalIn) (any, error) {
			req := api.SignalRequest{Outcome: in.Outcome}
			if in.Data != nil {
				b, err := json.Marshal(in.Data)
				if err != nil {
					return nil, &api.Error{Code: api.CodeInvalidField, Field: "data", Message: err.Error()}
				}
				req.Data = b
			}
			sig, err := a.SendSignal(ctx, in.URL, req)
			var ae *api.Error
			if errors.As(err, &ae) && sig.State != "" {
				// Settled already: say how, as the REST answer does.
				e := *ae
				e.Message += fmt.Sprintf(" (the signal is %s", sig.State)
				if sig.Outcome != "" {
					e.Message += fmt.Sprintf(", answered %q", sig.Outcome)
				}
				e.Message += ")"
				return nil, &e
			}
			return sig, err
		}))
	mcp.AddTool(srv, &mcp.Tool{Name: toolCompleteWork, Title: "Complete a Work",
		Description: "Complete a Work you claimed: the thread's next item opens a new Work."},
		handler(s, func(ctx context.Context, a API, in workIn) (any, error) { return a.CompleteWork(ctx, in.ID) }))
}
