package api

import (
	"encoding/json"
	"time"
)

// Error codes. Each has one HTTP status (see Status).
const (
	CodeMalformedJSON       = "malformed_json"
	CodeBodyTooLarge        = "body_too_large"
	CodeInvalidParams       = "invalid_params"
	CodeInvalidField        = "invalid_field"
	CodeInvalidRecipient    = "invalid_recipient"
	CodeWatchUnobservable   = "watch_unobservable"
	CodeDeadlineTooFar      = "deadline_too_far"
	CodeRecipientNotRunning = "recipient_not_running"
	CodeAlreadySettled      = "already_settled"
	CodeNotFound            = "not_found"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodeUnauthorized        = "unauthorized"
	CodeForbidden           = "forbidden"
	CodePluginFault         = "plugin_fault"
	CodeInternal            = "internal"
	CodeNotAReporter        = "not_a_reporter"
	CodeOnceConflict        = "once_conflict"
	CodeWorkConflict        = "work_conflict"
	CodeRateLimited         = "rate_limited"
	// CodeObserveUnavailable: the scope has no observe entry (its last was
	// removed, or it never had one), so it has no record operation. It is
	// not CodeNotAReporter: no principal may record there.
	CodeObserveUnavailable = "observe_unavailable"
	// CodeDestinationRefused: a destination the watch would fetch is an
	// address the fetch guard always refuses (loopback, private,
	// link-local, metadata); setting names the range grant that allows it.
	CodeDestinationRefused = "destination_refused"
	// CodePluginSetMismatch: this cluster node's plugin set differs from
	// the cluster's, so it takes no watches (the owner of one might lack
	// its kind); the message names both digests and the kinds that
	// differ. Register through another node, or retry once the operator
	// has reloaded this one with the cluster's plugins (Retry-After).
	CodePluginSetMismatch = "plugin_set_mismatch"
)

// Status is the HTTP status of an error code.
func Status(code string) int {
	switch code {
	case CodeMalformedJSON, CodeMalformedRequest, CodeInvalidIdempotencyKey:
		return 400
	case CodeUnauthorized:
		return 401
	case CodeForbidden, CodeNotAReporter:
		return 403
	case CodeNotFound, CodeObserveUnavailable:
		return 404
	case CodeMethodNotAllowed:
		return 405
	case CodeRequestTimeout:
		return 408
	case CodeAlreadySettled, CodeRecipientNotRunning, CodeOnceConflict, CodeWorkConflict:
		return 409
	case CodeBodyTooLarge:
		return 413
	case CodeURITooLong:
		return 414
	case CodeRateLimited:
		return 429
	case CodeInvalidParams, CodeInvalidField, CodeInvalidRecipient, CodeWatchUnobservable, CodeDeadlineTooFar,
		CodeDestinationRefused, CodeIdempotencyKeyReused, CodeIdempotencyAnswerUnkept:
		return 422
	case CodePluginFault, CodeTooManyWaiters, CodeTooManySessions, CodePluginSetMismatch, CodeStoreBusy,
		CodeStoreUnavailable, CodeHookBusy:
		return 503
	case CodeTooManyRefs, CodeTooManyPending:
		return 422
	case CodeHeadersTooLarge:
		return 431
	case CodeInsufficientStorage:
		return 507
	}
	return 500
}

// Error codes of the transport and of the per-recipient bounds. A
// recipient's webhook refused as CodeDestinationRefused names the setting
// webhook_allow.
const (
	// CodeMalformedRequest: the request is not HTTP the server can read.
	CodeMalformedRequest = "malformed_request"
	// CodeRequestTimeout: the request (its headers or its body) did not
	// arrive within the server's read timeout.
	CodeRequestTimeout = "request_timeout"
	// CodeURITooLong: the request target, or the request line, is over
	// the server's limit.
	CodeURITooLong = "uri_too_long"
	// CodeHeadersTooLarge: the request line and headers together are over
	// the server's read buffer.
	CodeHeadersTooLarge = "headers_too_large"
	// CodeTooManyRefs: a recipient's refs are over the host's bound.
	CodeTooManyRefs = "too_many_refs"
	// CodeTooManyPending: the recipient already holds the host's bound of
	// pending watches.
	CodeTooManyPending = "too_many_pending"
	// CodeTooManyWaiters: the host already holds its bound of requests
	// waiting on a watch's change (GET /api/v1/watches/{id}?wait=).
	// Retry later, or without wait.
	CodeTooManyWaiters = "too_many_waiters"
	// CodeTooManySessions: the host already holds its bound of open MCP
	// sessions (/mcp); retry later, or end a session you no longer use.
	CodeTooManySessions = "too_many_sessions"
	// CodeStoreBusy: the write lost the race for its records to other
	// writers (other nodes of a cluster, or other requests for the same
	// recipient) more times than the store retries; nothing was written.
	// Retry after the Retry-After header's seconds.
	CodeStoreBusy = "store_busy"
	// CodeHookBusy: the host's queue of inbound hook events
	// (POST /api/v1/hooks/{source}) is full; nothing was taken. The
	// sender retries after the Retry-After header's seconds, as forges
	// and Standard Webhooks senders do.
	CodeHookBusy = "hook_busy"
)

// CodeInsufficientStorage: the host's disk has no room for the write
// (its data directory is nearly full, or a JetStream server refused the
// message for its storage limits); nothing was written. Reads go on, and
// the same write succeeds once the operator frees space, without a
// restart: retry after the Retry-After header's seconds (Error.RetryAfter).
const CodeInsufficientStorage = "insufficient_storage"

// Error codes of idempotency keys and of a store that cannot answer.
const (
	// CodeInvalidIdempotencyKey: the Idempotency-Key header is not a key
	// (1 to 255 bytes of visible ASCII, bare or a quoted string), or is
	// sent twice.
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	// CodeIdempotencyKeyReused: the principal used the idempotency key
	// within the last 24 hours for another request (another method,
	// path or body); nothing was written. Use a fresh key per request.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeIdempotencyAnswerUnkept: the same request was made under the
	// idempotency key before and written then, once, but its answer's
	// body was too large for the store to keep, so it cannot be sent
	// again; nothing was written now. Read what the request wrote (a
	// claimed Work: GET /api/v1/work/{id}); do not send it again under a
	// fresh key unless a second write is what you want.
	CodeIdempotencyAnswerUnkept = "idempotency_answer_unkept"
	// CodeStoreUnavailable: the store could not be reached, or did not
	// answer a write's commit (a cluster without a leader or a quorum).
	// The message says whether the write may have happened. Retry after
	// Retry-After; a write sent again with its Idempotency-Key is made at
	// most once either way.
	CodeStoreUnavailable = "store_unavailable"
)

// Error is the one error envelope's content.
//
// It is also the one error type the host's services refuse with (the
// scheduler's, the recipients', the kinds' admit refusals, observe's), so
// the API maps a refusal with errors.As and never by its text.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Setting string `json:"setting,omitempty"`
	// RetryAfter, with CodeRateLimited, CodePluginSetMismatch,
	// CodeStoreBusy or CodeStoreUnavailable, is how long to wait: it goes
	// out as the Retry-After header, not in the body.
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	switch {
	case e.Field != "":
		return e.Code + ": " + e.Field + ": " + e.Message
	case e.Setting != "":
		return e.Code + ": " + e.Message + " (setting: " + e.Setting + ")"
	}
	return e.Code + ": " + e.Message
}

// ErrorEnvelope is every error response: {"error":{…}}.
type ErrorEnvelope struct {
	Error Error `json:"error"`
}

// RecipientRef names a watch's recipient.
type RecipientRef struct {
	ID string `json:"id"`
}

// WatchRequest registers a watch. Every is a Go duration ("30s"); Every
// and ExpiresAt are optional and default per predicate.
type WatchRequest struct {
	Kind      string          `json:"kind"`
	Params    json.RawMessage `json:"params"`
	Recipient RecipientRef    `json:"recipient"`
	Every     string          `json:"every,omitempty"`
	ExpiresAt *time.Time      `json:"expires_at,omitempty"`
}

// Outcome is what a settled watch concluded.
type Outcome struct {
	Result  string          `json:"result"`
	Summary string          `json:"summary,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Watch is a watch as the API returns it. ExpiresAt is null only for a
// standing watch.
type Watch struct {
	ID        string          `json:"id"`
	Kind      string          `json:"kind"`
	Params    json.RawMessage `json:"params"`
	Recipient RecipientRef    `json:"recipient"`
	// RegisteredBy is the principal that registered the watch; absent
	// for the host's own (standing watches it reconciles).
	RegisteredBy string     `json:"registered_by,omitempty"`
	State        string     `json:"state"`
	Receipt      string     `json:"receipt"`
	Every        string     `json:"every"`
	CreatedAt    time.Time  `json:"created_at"`
	ExpiresAt    *time.Time `json:"expires_at"`
	SettledAt    *time.Time `json:"settled_at,omitempty"`
	Outcome      *Outcome   `json:"outcome,omitempty"`
	// Attempts is the probes so far.
	Attempts int    `json:"attempts"`
	LastNote string `json:"last_note,omitempty"`
	// LastProbeAt is when the last probe began, while the host knows it:
	// it is kept in memory between state changes, so after a restart it
	// is absent until the next probe.
	LastProbeAt *time.Time `json:"last_probe_at,omitempty"`
	// ProbesFrom, on a cluster, says whose count Attempts and LastProbeAt
	// are for a pending watch: "owner" (the node probing it, asked when
	// it is another) or "store" (the owner did not answer in time, or
	// none holds the watch now: the count last written, with no last
	// probe time). Absent on one host, whose own scheduler always counts.
	ProbesFrom string `json:"probes_from,omitempty"`
	// LastFault is why the last probe gave no answer (a timeout, a trap,
	// a plugin error); absent once one answers.
	LastFault *Fault `json:"last_fault,omitempty"`
	// Version is opaque: it changes whenever the state, the receipt, the
	// probes so far or the last observation (note, fault, next check)
	// does. Pass it as since to wait for the next change.
	Version string `json:"version"`
	// SignalURL is a signal's capability URL, in its registration's
	// answer only (never in a read or a listing, and not in the answer a
	// retry with the same idempotency key replays): whoever holds it
	// answers the signal, with no bearer token.
	SignalURL string `json:"signal_url,omitempty"`
}

// SignalRequest is the body of POST /api/v1/signals/{token}: one of the
// outcomes the signal offers and, optionally, data its schema admits.
type SignalRequest struct {
	Outcome string          `json:"outcome"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Signal is a signal as its URL shows it (GET with Accept:
// application/json) and as its completion answers it.
type Signal struct {
	Title    string          `json:"title"`
	Prompt   string          `json:"prompt,omitempty"`
	Outcomes []string        `json:"outcomes"`
	Schema   json.RawMessage `json:"schema,omitempty"`
	// State is the watch's: pending until answered (fired), expired at
	// its deadline, or cancelled.
	State     string     `json:"state"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	SettledAt *time.Time `json:"settled_at,omitempty"`
	// Outcome and Data are the answer, once fired.
	Outcome string          `json:"outcome,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// SignalConflict is the 409 of a completion of a signal already settled:
// the error, and the signal as it settled (the first answer's outcome).
type SignalConflict struct {
	Error  Error  `json:"error"`
	Signal Signal `json:"signal"`
}

// The values of Watch.ProbesFrom.
const (
	ProbesFromOwner = "owner"
	ProbesFromStore = "store"
)

// Fault is a probe that gave no answer: its reason (timeout, trap,
// memory, output_too_large, bad_output, raised, instantiate, or error)
// and what went wrong.
type Fault struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// WatchList is one page of a listing. HeldAside counts the rows this page
// stepped over because this build cannot read them. Next, when set, is the
// opaque cursor of the following page (pass it as after); a page may be
// short, even empty, and still have a Next.
type WatchList struct {
	Watches   []Watch `json:"watches"`
	HeldAside int     `json:"held_aside,omitempty"`
	Next      string  `json:"next,omitempty"`
}

// Message is one mailbox message; ID is its stable id (the webhook-id of
// its webhook delivery).
type Message struct {
	Seq     uint64    `json:"seq"`
	ID      string    `json:"id"`
	WatchID string    `json:"watch_id"`
	Kind    string    `json:"kind"`
	Type    string    `json:"type"`
	Outcome Outcome   `json:"outcome"`
	At      time.Time `json:"at"`
	// Push is what became of the message's webhook push so far, on a
	// mailbox read; absent when the recipient had no webhook. Never part
	// of the webhook body or of a stream event.
	Push *MessagePush `json:"push,omitempty"`
}

// MessagePush is the state of a message's webhook push: pending (waiting
// for its first attempt), sending, retrying (at NextAttempt), delivered,
// failed, or unknown (a request went out and no answer came; never sent
// again).
type MessagePush struct {
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// Mailbox is a mailbox read: the messages after the cursor, and the
// cursor to pass next time.
type Mailbox struct {
	Messages []Message `json:"messages"`
	Next     uint64    `json:"next"`
}

// DeadLetter is a fetch command the host refused before any request went
// out (a header the issuer contract forbids, a destination or host not
// granted). It names headers, never their values.
type DeadLetter struct {
	Seq         uint64    `json:"seq"`
	CommandID   string    `json:"command_id"`
	Kind        string    `json:"kind"`
	Method      string    `json:"method"`
	URL         string    `json:"url"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	HeaderNames []string  `json:"header_names"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// DeadLetters is a read of the dead-letter list from a cursor.
type DeadLetters struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	Next        uint64       `json:"next"`
}

// ObserveRequest records an item seen in an outside source. The reporter
// is the authenticated principal, never a field. Run names the run that
// saw the item (a scheduled job's occurrence, a CI run): kept on the event
// for audit, part of no identity, and the key of a per-run budget.
type ObserveRequest struct {
	Item     string `json:"item"`
	Thread   string `json:"thread"`
	Text     string `json:"text,omitempty"`
	Revision string `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
	Run      string `json:"run,omitempty"`
}

// ObservedEvent is the event a record made (or, for a duplicate, the
// first record's event: its reporter, and its run when it named one).
type ObservedEvent struct {
	Seq        uint64    `json:"seq"`
	Key        string    `json:"key"`
	Type       string    `json:"type"`
	Source     string    `json:"source"`
	Reporter   string    `json:"reporter"`
	Run        string    `json:"run,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
}

// ObserveResult answers a record.
type ObserveResult struct {
	Duplicate bool          `json:"duplicate"`
	ThreadKey string        `json:"thread_key"`
	Event     ObservedEvent `json:"event"`
}

// WorkInput is one item routed to a Work, numbered from 1.
type WorkInput struct {
	N          int       `json:"n"`
	Source     string    `json:"source"`
	Item       string    `json:"item"`
	Revision   string    `json:"revision,omitempty"`
	Thread     string    `json:"thread"`
	Text       string    `json:"text"`
	Reporter   string    `json:"reporter,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// Work is a durable work item: one per observed thread. Inputs is set
// when one Work is read or claimed (completing answers the Work without
// them).
type Work struct {
	ID          string      `json:"id"`
	Scope       string      `json:"scope"`
	Kind        string      `json:"kind"`
	Title       string      `json:"title"`
	ThreadKey   string      `json:"thread_key"`
	State       string      `json:"state"`
	InputCount  int         `json:"input_count"`
	Consumed    int         `json:"consumed"`
	ClaimedBy   string      `json:"claimed_by,omitempty"`
	CreatedAt   time.Time   `json:"created_at"`
	ClaimedAt   *time.Time  `json:"claimed_at,omitempty"`
	CompletedAt *time.Time  `json:"completed_at,omitempty"`
	Inputs      []WorkInput `json:"inputs,omitempty"`
}

// WorkList is a scope's Work.
type WorkList struct {
	Work []Work `json:"work"`
}

// ClaimRequest claims a Work for a recipient.
type ClaimRequest struct {
	Recipient RecipientRef `json:"recipient"`
}

// WebhookRequest sets a recipient's webhook. Secret is write-only.
type WebhookRequest struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// Ref attaches a subject to a recipient: one standing watch of Kind with
// Params while the recipient runs.
type Ref struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

// RecipientRequest is the body of PUT /api/v1/recipients/{id}.
type RecipientRequest struct {
	Status     string             `json:"status"`
	Webhook    *WebhookRequest    `json:"webhook,omitempty"`
	Refs       []Ref              `json:"refs,omitempty"`
	Workspace  string             `json:"workspace,omitempty"`
	Heartbeats []HeartbeatRequest `json:"heartbeats,omitempty"`
}

// HeartbeatRequest declares a heartbeat: missed when no ping comes within
// Period plus Grace (Go durations) of the last one.
type HeartbeatRequest struct {
	Name   string `json:"name"`
	Period string `json:"period"`
	Grace  string `json:"grace"`
}

// Heartbeat is a declared heartbeat as a recipient's view shows it.
// PingURL is shown only to a principal that may act for the recipient.
type Heartbeat struct {
	Name     string     `json:"name"`
	Period   string     `json:"period"`
	Grace    string     `json:"grace"`
	PingURL  string     `json:"ping_url,omitempty"`
	LastPing *time.Time `json:"last_ping,omitempty"`
	Failed   bool       `json:"failed,omitempty"`
	Note     string     `json:"note,omitempty"`
}

// HookAccepted is the answer of a hook source's URL
// (POST /api/v1/hooks/{source}, 202): Queued is false for a Standard
// Webhooks retry of an event already taken (its webhook-id seen within
// the replay window), which is not queued again.
type HookAccepted struct {
	Queued bool `json:"queued"`
}

// Ping is the answer of a heartbeat's ping URL.
type Ping struct {
	Heartbeat string    `json:"heartbeat"`
	LastPing  time.Time `json:"last_ping"`
	Failed    bool      `json:"failed"`
}

// WebhookView is a recipient's webhook as returned: never the secret.
type WebhookView struct {
	URL string `json:"url"`
	// DisabledAt is set when the receiver answered 410 Gone: nothing is
	// pushed to the URL until the recipient's webhook is set again.
	DisabledAt     *time.Time `json:"disabled_at,omitempty"`
	DisabledReason string     `json:"disabled_reason,omitempty"`
}

// Recipient is a recipient as the API returns it.
type Recipient struct {
	ID        string       `json:"id"`
	Status    string       `json:"status"`
	Webhook   *WebhookView `json:"webhook,omitempty"`
	Refs      []Ref        `json:"refs"`
	Workspace string       `json:"workspace,omitempty"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
	// Phase, Activity and ReminderEvery are set through their own routes
	// (…/phase, …/activity, …/reminder), never by a PUT of the recipient.
	Phase         *Phase    `json:"phase,omitempty"`
	Activity      *Activity `json:"activity,omitempty"`
	ReminderEvery string    `json:"reminder_every,omitempty"`
	// Heartbeats are the heartbeats it declares, each with its ping URL
	// for a principal that may act for it.
	Heartbeats []Heartbeat `json:"heartbeats,omitempty"`
}

// PhaseRequest is the body of PUT /api/v1/recipients/{id}/phase.
type PhaseRequest struct {
	Name string `json:"name"`
	Text string `json:"text,omitempty"`
}

// Phase is what a recipient last said it is working on. Seeded is true
// when the principal that reported it (ReportedBy) was not acting as the
// recipient itself; the phase reminder acts only on a phase that is not.
type Phase struct {
	Name       string    `json:"name"`
	Text       string    `json:"text,omitempty"`
	ReportedBy string    `json:"reported_by"`
	Seeded     bool      `json:"seeded"`
	ReportedAt time.Time `json:"reported_at"`
}

// ActivityRequest is the body of POST /api/v1/recipients/{id}/activity:
// counts to add.
type ActivityRequest struct {
	Replies   int64 `json:"replies,omitempty"`
	ToolCalls int64 `json:"tool_calls,omitempty"`
}

// Activity is the counts that move while a recipient works; At is the
// last report.
type Activity struct {
	Replies   uint64     `json:"replies"`
	ToolCalls uint64     `json:"tool_calls"`
	At        *time.Time `json:"at,omitempty"`
}

// ReminderRequest is the body of PUT /api/v1/recipients/{id}/reminder.
type ReminderRequest struct {
	Every string `json:"every"`
}

// Reminder is a recipient's opt-in to the phase reminder.
type Reminder struct {
	Every string `json:"every"`
}

// Plugin is a loaded plugin.
type Plugin struct {
	Kind         string   `json:"kind"`
	Version      string   `json:"version"`
	Summary      string   `json:"summary"`
	Standing     bool     `json:"standing"`
	DefaultEvery string   `json:"default_every"`
	Capabilities []string `json:"capabilities"`
	Observable   bool     `json:"observable"`
	Setting      string   `json:"setting,omitempty"`
	// Wakes says the kind maps an inbound event to the watches it
	// concerns (its plugin exports wake).
	Wakes bool   `json:"wakes,omitempty"`
	File  string `json:"file"`
	// Source is "bundled" or the plugin directory's path; SHA256 the hex
	// SHA-256 of the .wasm file.
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
}

// PluginProblem is a plugin file that did not load.
type PluginProblem struct {
	File  string `json:"file"`
	Kind  string `json:"kind,omitempty"`
	Rule  string `json:"rule"`
	Error string `json:"error"`
}

// PluginList is GET /api/v1/plugins.
type PluginList struct {
	Plugins  []Plugin        `json:"plugins"`
	Problems []PluginProblem `json:"problems"`
}

// Kind is a kind the host serves, plugin or built in, as its describe
// says it: what a watch of it waits on, and the params it takes.
// ParamsSchema is a JSON Schema of the params; Example, when the kind
// gives one, is params it admits.
type Kind struct {
	Kind         string          `json:"kind"`
	Version      string          `json:"version,omitempty"`
	Summary      string          `json:"summary"`
	Standing     bool            `json:"standing"`
	DefaultEvery string          `json:"default_every,omitempty"`
	Observable   bool            `json:"observable"`
	Setting      string          `json:"setting,omitempty"`
	ParamsSchema json.RawMessage `json:"params_schema,omitempty"`
	Example      json.RawMessage `json:"example,omitempty"`
	// BuiltIn is a kind the host serves itself (observe.thread,
	// recipient.reminder), not a plugin.
	BuiltIn bool `json:"built_in,omitempty"`
}

// KindList is GET /api/v1/kinds, by kind name.
type KindList struct {
	Kinds []Kind `json:"kinds"`
	// Version is a digest of the kinds: it differs when, and only when,
	// the list does. GET /kinds?wait=D&since=V waits while it is V.
	Version string `json:"version,omitempty"`
}
