package recipients

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"

	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/captoken"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Store is what the service needs of the store.
type Store interface {
	GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error)
	PutRecipient(ctx context.Context, r store.RecipientRecord) (store.RecipientRecord, bool, error)
	ListRecipients(ctx context.Context) ([]store.RecipientRecord, error)
	List(ctx context.Context, f store.Filter) ([]store.Watch, int, error)
	// CountPending counts a recipient's pending watches up to upTo,
	// without reading every row.
	CountPending(ctx context.Context, recipient string, upTo int) (int, error)
	// PendingRecipients names the recipients the recipients' index holds
	// (at least every one with a pending row), reading no row.
	PendingRecipients(ctx context.Context, fn func(id string) error) error
	// ForEachPendingOfKind gives a kind's pending rows, reading no other.
	ForEachPendingOfKind(ctx context.Context, kind string, fn func(store.Watch) error) error
}

// Scheduler is what reconciliation needs of the scheduler.
type Scheduler interface {
	Register(ctx context.Context, r scheduler.Registration) (store.Watch, error)
	Cancel(ctx context.Context, id store.ID, reason string) (store.Watch, error)
}

// Kinds tells which kinds are standing, and admits a ref's params before
// the recipient is stored, so a refused ref changes nothing.
type Kinds interface {
	Lookup(kind string) (kind.Info, bool)
	// Infos lists the kinds served now: ReconcileAll reads the pending
	// rows of the standing ones.
	Infos() []kind.Info
	Admit(ctx context.Context, name string, req kind.AdmitRequest) (kind.Admission, error)
}

// Destinations judges the addresses a webhook may be delivered to: the
// delivery guard, *netguard.Guard.
type Destinations interface {
	CheckAddr(ip netip.Addr) error
}

// Limits bound what one recipient holds. Zero fields take the defaults.
type Limits struct {
	// MaxRefs bounds the refs of one recipient (default 1,000).
	MaxRefs int
	// MaxPending bounds one recipient's pending watches, standing ones
	// included (default 10,000): a registration for a recipient already
	// there is refused.
	MaxPending int
}

// Default limits.
const (
	DefaultMaxRefs    = 1_000
	DefaultMaxPending = 10_000
)

// Settings that raise the limits and allow a refused webhook destination,
// as errors name them.
const (
	SettingMaxRefs      = "recipient_max_refs"
	SettingMaxPending   = "recipient_max_pending"
	SettingWebhookAllow = "webhook_allow"
)

// Pending is MaxPending, or its default when zero.
func (l Limits) Pending() int { return l.withDefaults().MaxPending }

func (l Limits) withDefaults() Limits {
	if l.MaxRefs <= 0 {
		l.MaxRefs = DefaultMaxRefs
	}
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	return l
}

// Service manages recipients.
type Service struct {
	store  Store
	sched  Scheduler
	kinds  Kinds
	clock  clock.Clock
	log    *slog.Logger
	limits Limits
	// dests, when set, refuses webhook URLs whose host the guard always
	// refuses; nil checks none (a host without a delivery guard).
	dests Destinations
}

// New builds a Service with the default limits and no destination check.
func New(st Store, sched Scheduler, kinds Kinds, clk clock.Clock, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{store: st, sched: sched, kinds: kinds, clock: clock.Or(clk), log: log.With("component", "recipients"), limits: Limits{}.withDefaults()}
}

// WithLimits returns a copy of s bounded by l (zero fields: the defaults).
func (s *Service) WithLimits(l Limits) *Service {
	c := *s
	c.limits = l.withDefaults()
	return &c
}

// WithDestinations returns a copy of s that refuses, at PUT, a webhook
// whose host d refuses whatever DNS answers: the guard delivery dials
// through, so a URL it could never reach is a 422 naming the allow list
// now, not a failed delivery later.
func (s *Service) WithDestinations(d Destinations) *Service {
	c := *s
	c.dests = d
	return &c
}

// Limits are the service's bounds, defaults resolved.
func (s *Service) Limits() Limits { return s.limits }

// Update is a recipient as a client sets it. A nil Webhook removes it.
type Update struct {
	ID      string
	Status  store.RecipientStatus
	Webhook *store.Webhook
	Refs    []store.Ref
	// Workspace is an absolute, clean directory path, or "".
	Workspace string
	// Caller is the principal putting the record, as the admission of
	// its refs asks of it (kind.AdmitRequest); nil reads nothing.
	Caller kind.Caller
	// Heartbeats are the heartbeats it declares (their tokens are the
	// service's: a name it declared before keeps its ping URL).
	Heartbeats []HeartbeatDecl
}

// HeartbeatDecl is a heartbeat as a client declares it.
type HeartbeatDecl struct {
	Name   string
	Period time.Duration
	Grace  time.Duration
}

// Put validates and stores a recipient, then reconciles its watches.
func (s *Service) Put(ctx context.Context, u Update) (store.RecipientRecord, error) {
	if !store.ValidRecipientID(u.ID) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: store.RecipientIDGrammar}
	}
	if !u.Status.Valid() {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: "status", Message: "want running, paused or stopped"}
	}
	if u.Webhook != nil {
		if err := s.checkWebhook(ctx, *u.Webhook); err != nil {
			return store.RecipientRecord{}, err
		}
	}
	if len(u.Refs) > s.limits.MaxRefs {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeTooManyRefs, Field: "refs", Setting: SettingMaxRefs,
			Message: fmt.Sprintf("%d refs; a recipient holds at most %d", len(u.Refs), s.limits.MaxRefs)}
	}
	if w := u.Workspace; w != "" && (!filepath.IsAbs(w) || filepath.Clean(w) != w || strings.ContainsRune(w, 0) || len(w) > MaxWorkspace) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: "workspace",
			Message: fmt.Sprintf("want an absolute, clean directory path of at most %d bytes", MaxWorkspace)}
	}
	for i, ref := range u.Refs {
		if !abi.ValidKind(ref.Kind) {
			return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("refs[%d].kind", i),
				Message: fmt.Sprintf("want 1-%d of a-z 0-9 . _ -", abi.MaxKindLen)}
		}
		if err := kind.CheckParams(ref.Params); err != nil {
			var rf *api.Error
			if errors.As(err, &rf) {
				return store.RecipientRecord{}, &api.Error{Code: rf.Code, Field: fmt.Sprintf("refs[%d].%s", i, rf.Field), Message: rf.Message}
			}
			return store.RecipientRecord{}, err
		}
		info, ok := s.kinds.Lookup(ref.Kind)
		if !ok || !info.Standing {
			return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("refs[%d].kind", i),
				Message: fmt.Sprintf("%q is not a standing kind this host serves", ref.Kind)}
		}
		if _, err := canonical(ref.Params); err != nil {
			return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("refs[%d].params", i), Message: err.Error()}
		}
		if _, err := s.kinds.Admit(ctx, ref.Kind, kind.AdmitRequest{Params: ref.Params, Recipient: u.ID, Caller: u.Caller}); err != nil {
			var (
				hidden *kind.HiddenError
				ref    *api.Error
			)
			if errors.As(err, &hidden) {
				return store.RecipientRecord{}, err // as an unknown id: no field of the record named
			}
			if errors.As(err, &ref) {
				field := fmt.Sprintf("refs[%d]", i)
				if ref.Field != "" {
					field += "." + ref.Field
				}
				return store.RecipientRecord{}, &api.Error{Code: ref.Code, Field: field, Message: ref.Message}
			}
			return store.RecipientRecord{}, err
		}
	}
	hbs, err := s.heartbeats(ctx, u)
	if err != nil {
		return store.RecipientRecord{}, err
	}
	now := s.clock.Now().UTC()
	rec := store.RecipientRecord{ID: u.ID, Status: u.Status, Webhook: u.Webhook, Refs: u.Refs, Workspace: u.Workspace, CreatedAt: now, UpdatedAt: now, Heartbeats: hbs}
	if _, _, err := s.store.PutRecipient(ctx, rec); err != nil {
		var big *store.ValueTooLargeError
		if errors.As(err, &big) {
			return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidField, Field: "refs",
				Message: fmt.Sprintf("the record with its refs is %d bytes, over the %d a recipient's record holds: attach fewer refs, or refs with smaller params", big.Size, big.Limit)}
		}
		return store.RecipientRecord{}, err
	}
	if err := s.Reconcile(ctx, u.ID); err != nil {
		return store.RecipientRecord{}, err
	}
	return s.store.GetRecipient(ctx, u.ID)
}

// heartbeats checks u's heartbeats and gives each its ping token: the
// one it had when the record already declares its name, else a new one.
func (s *Service) heartbeats(ctx context.Context, u Update) ([]store.Heartbeat, error) {
	if len(u.Heartbeats) == 0 {
		return nil, nil
	}
	if len(u.Heartbeats) > heartbeat.MaxHeartbeats {
		return nil, &api.Error{Code: api.CodeInvalidField, Field: "heartbeats", Message: fmt.Sprintf("%d heartbeats; a recipient declares at most %d", len(u.Heartbeats), heartbeat.MaxHeartbeats)}
	}
	old, err := s.store.GetRecipient(ctx, u.ID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	out := make([]store.Heartbeat, 0, len(u.Heartbeats))
	seen := map[string]bool{}
	for i, d := range u.Heartbeats {
		if err := heartbeat.Check(d.Name, d.Period, d.Grace); err != nil {
			return nil, &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("heartbeats[%d]", i), Message: err.Error()}
		}
		if seen[d.Name] {
			return nil, &api.Error{Code: api.CodeInvalidField, Field: fmt.Sprintf("heartbeats[%d].name", i), Message: fmt.Sprintf("heartbeat %q is declared twice", d.Name)}
		}
		seen[d.Name] = true
		h := store.Heartbeat{Name: d.Name, Period: store.Duration(d.Period), Grace: store.Duration(d.Grace)}
		for _, o := range old.Heartbeats {
			if o.Name == d.Name {
				h.Token = o.Token
			}
		}
		if h.Token == "" {
			if h.Token, err = captoken.New(rand.Reader); err != nil {
				return nil, err
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// MaxWorkspace bounds a workspace path, in bytes: Linux's PATH_MAX.
const MaxWorkspace = 4096

// MaxWebhookURL bounds a webhook URL, in bytes: the limit clients,
// proxies and CDNs commonly kept for a URL (RFC 9110 asks only that
// 8,000 octets be supported), far past any receiver's endpoint, and the
// URL is kept on the recipient record and named in each push's log.
const MaxWebhookURL = 2048

// checkWebhook refuses a webhook the outbox could not use: a URL that is
// not absolute http(s) without credentials, or over MaxWebhookURL; a
// secret CheckSecret refuses (outside the Standard Webhooks key sizes,
// 24 to 64 bytes); a destination the guard always refuses.
func (s *Service) checkWebhook(ctx context.Context, w store.Webhook) error {
	if len(w.URL) > MaxWebhookURL {
		return &api.Error{Code: api.CodeInvalidField, Field: "webhook.url",
			Message: fmt.Sprintf("%d bytes; a webhook URL is at most %d", len(w.URL), MaxWebhookURL)}
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return &api.Error{Code: api.CodeInvalidField, Field: "webhook.url", Message: "want an absolute http or https URL without credentials"}
	}
	if err := webhooks.CheckSecret(w.Secret); err != nil {
		return &api.Error{Code: api.CodeInvalidField, Field: "webhook.secret",
			Message: fmt.Sprintf("want whsec_ and the standard base64 of a %d- to %d-byte key", webhooks.MinNewSecretBytes, webhooks.MaxSecretBytes)}
	}
	if s.dests != nil {
		if err := s.checkDestination(ctx, u.Hostname()); err != nil {
			return err
		}
	}
	return nil
}

// checkDestination refuses a webhook host whose every address the guard
// refuses whatever DNS answers: a literal address, in any spelling a
// resolver reads without DNS, or a name such as localhost whose addresses
// are fixed (netguard.LiteralResolver). Delivery dials each address in
// turn through the guard, so one address let through is a delivery that
// can succeed, and passes. Any other name is left to the dial, as before.
func (s *Service) checkDestination(ctx context.Context, host string) error {
	addrs, err := netguard.LiteralResolver{}.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil // a name only DNS can answer: checked when dialled
	}
	var first *netguard.RefusedError
	for _, ip := range addrs {
		err := s.dests.CheckAddr(ip)
		if err == nil {
			return nil
		}
		if re := (*netguard.RefusedError)(nil); errors.As(err, &re) && first == nil {
			first = re
		}
	}
	if first == nil {
		return nil
	}
	return &api.Error{Code: api.CodeDestinationRefused, Field: "webhook.url", Setting: SettingWebhookAllow,
		Message: fmt.Sprintf("%s reaches %s, %s: the host never delivers there unless an allow prefix contains it (serve --webhook-allow, VIGIL_WEBHOOK_ALLOW, config webhook_allow)",
			host, first.Addr, first.Reason)}
}

// CheckPending refuses a new watch for a recipient that already holds
// MaxPending pending watches: a *Error with CodeTooManyPending naming
// recipient.id. The count is one key the store's commits keep. It is the
// early answer; the registration's own transaction holds the bound too
// (scheduler.Registration.Bounded), so registrations racing cannot pass
// it.
func (s *Service) CheckPending(ctx context.Context, recipient string) error {
	if !store.ValidRecipientID(recipient) {
		return nil // Register refuses a malformed id, naming it
	}
	n, err := s.store.CountPending(ctx, recipient, s.limits.MaxPending)
	if err != nil {
		return fmt.Errorf("recipients: counting the pending watches of %s: %w", recipient, err)
	}
	if n >= s.limits.MaxPending {
		return TooManyPending(recipient, s.limits.MaxPending)
	}
	return nil
}

// TooManyPending is the refusal of a registration for a recipient that
// holds max pending watches, CheckPending's and the registration's own
// (a *store.TooManyPendingError, when registrations raced to the bound).
func TooManyPending(recipient string, max int) *api.Error {
	return &api.Error{Code: api.CodeTooManyPending, Field: "recipient.id", Setting: SettingMaxPending,
		Message: fmt.Sprintf("recipient %s holds %d pending watches, the most it may; cancel some or let them settle", recipient, max)}
}

// Reconcile makes a recipient's pending watches match its record: none
// unless it is running; while it runs, the standing watches standing
// derives from its record (one per attached ref, the reminder when it
// opted in). It is idempotent.
//
// Its writes are the host's, whoever's request led to it (a PUT of the
// record): they carry neither the client's mark nor its idempotency key
// (store.HostWrite), so on a nearly full disk the watches the record
// names are still kept once the record itself was written.
func (s *Service) Reconcile(ctx context.Context, id string) error {
	ctx = store.HostWrite(ctx)
	rec, status, err := s.record(ctx, id)
	if err != nil {
		return err
	}
	if status != store.StatusRunning {
		return s.cancelAll(ctx, id, status)
	}
	pending, _, err := s.store.List(ctx, store.Filter{Recipient: id, State: store.Pending})
	if err != nil {
		return err
	}
	return s.keepStanding(ctx, rec, pending)
}

// record is a recipient's record and status; a recipient that is gone is
// stopped: it runs nothing.
func (s *Service) record(ctx context.Context, id string) (store.RecipientRecord, store.RecipientStatus, error) {
	rec, err := s.store.GetRecipient(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.RecipientRecord{ID: id}, store.StatusStopped, nil
	case err != nil:
		return rec, "", err
	}
	return rec, rec.Status, nil
}

// cancelAll cancels every pending watch of a recipient that is not
// running; the count its commits keep says first whether it has any, so
// a stopped recipient with none costs one read.
func (s *Service) cancelAll(ctx context.Context, id string, status store.RecipientStatus) error {
	if n, err := s.store.CountPending(ctx, id, 1); err != nil || n == 0 {
		return err
	}
	pending, _, err := s.store.List(ctx, store.Filter{Recipient: id, State: store.Pending})
	if err != nil {
		return err
	}
	for _, w := range pending {
		s.cancel(ctx, w, "recipient "+string(status))
	}
	return nil
}

// keepStanding makes a running recipient's standing watches the ones its
// record derives: pending holds its pending watches, of which only the
// standing ones are read.
func (s *Service) keepStanding(ctx context.Context, rec store.RecipientRecord, pending []store.Watch) error {
	id := rec.ID
	wanted := map[string]standingWatch{}
	for _, sw := range standing(rec) {
		key, err := refKey(sw.Kind, sw.Params)
		if err != nil {
			continue
		}
		wanted[key] = sw
	}
	have := map[string]bool{}
	for _, w := range pending {
		if !w.Standing {
			continue
		}
		key, err := refKey(w.Kind, w.Params)
		if _, want := wanted[key]; err != nil || !want || have[key] {
			s.cancel(ctx, w, "no longer wanted by the recipient's record")
			continue
		}
		have[key] = true
	}
	var errs []error
	// The reconciler's registrations carry its mark: a kind it keeps (the
	// reminder) admits no other. They are the host's (kind.HostCaller):
	// each ref was admitted with the grant of the principal that put it.
	ctx = heartbeat.WithReconciler(reminder.WithReconciler(ctx))
	for key, sw := range wanted {
		if have[key] {
			continue
		}
		_, err := s.sched.Register(ctx, scheduler.Registration{Kind: sw.Kind, Params: sw.Params, Every: sw.Every, Recipient: store.Recipient{ID: id}, Caller: kind.HostCaller{}})
		if err != nil {
			errs = append(errs, fmt.Errorf("standing watch %s for %s: %w", sw.Kind, id, err))
		}
	}
	return errors.Join(errs...)
}

// standingWatch is one standing watch a running recipient keeps: its
// kind and params (its identity), and its cadence (nil: the kind's).
type standingWatch struct {
	Kind   string
	Params json.RawMessage
	Every  *time.Duration
}

// standing is the one place that says which standing watches a running
// recipient keeps, each entry deriving its own from the record. A third
// standing kind is one more entry here, never a second reconciler racing
// this one over the same record.
func standing(rec store.RecipientRecord) []standingWatch {
	var out []standingWatch
	for _, from := range []func(store.RecipientRecord) []standingWatch{
		attachedRefs,       // one per ref a client attached (a ticket's changes)
		reminderOptIn,      // the phase reminder, at the interval it opted into
		declaredHeartbeats, // one per heartbeat it declared
	} {
		out = append(out, from(rec)...)
	}
	return out
}

func attachedRefs(rec store.RecipientRecord) []standingWatch {
	out := make([]standingWatch, 0, len(rec.Refs))
	for _, ref := range rec.Refs {
		out = append(out, standingWatch{Kind: ref.Kind, Params: ref.Params})
	}
	return out
}

func reminderOptIn(rec store.RecipientRecord) []standingWatch {
	every := time.Duration(rec.ReminderEvery)
	if every <= 0 {
		return nil
	}
	return []standingWatch{{Kind: reminder.Name, Params: reminder.ParamsFor(every), Every: &every}}
}

func declaredHeartbeats(rec store.RecipientRecord) []standingWatch {
	out := make([]standingWatch, 0, len(rec.Heartbeats))
	for _, h := range rec.Heartbeats {
		out = append(out, standingWatch{Kind: heartbeat.Name, Params: heartbeat.ParamsFor(h)})
	}
	return out
}

func (s *Service) cancel(ctx context.Context, w store.Watch, reason string) {
	if _, err := s.sched.Cancel(ctx, w.ID, reason); err != nil {
		var se *api.Error
		if errors.As(err, &se) && se.Code == api.CodeAlreadySettled {
			return
		}
		s.log.Error("cancelling a watch", "watch", w.ID, "recipient", w.Recipient.ID, "err", err)
	}
}

// ReconcileAll reconciles every recipient, and every recipient that pending
// watches name without a record, without reading every pending row: the
// ids come from the records and the recipients' index (the store's
// PendingRecipients), a running recipient's standing watches from the
// pending rows of the standing kinds alone, and a recipient that is not
// running has its rows listed only when the count its commits keep says
// it has any. A failure for one is logged and the pass goes on.
func (s *Service) ReconcileAll(ctx context.Context) error {
	recs, err := s.store.ListRecipients(ctx)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(recs))
	for _, r := range recs {
		known[r.ID] = true
	}
	var orphans []string
	if err := s.store.PendingRecipients(ctx, func(id string) error {
		if !known[id] {
			orphans = append(orphans, id)
		}
		return nil
	}); err != nil {
		return err
	}
	// The standing watches, by recipient: the pending rows of the kinds
	// that are standing, which refs and reminders bound, not the store's.
	standingOf := map[string][]store.Watch{}
	for _, info := range s.kinds.Infos() {
		if !info.Standing {
			continue
		}
		if err := s.store.ForEachPendingOfKind(ctx, info.Kind, func(w store.Watch) error {
			if w.Standing {
				standingOf[w.Recipient.ID] = append(standingOf[w.Recipient.ID], w)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, r := range recs {
		var err error
		if r.Status == store.StatusRunning {
			err = s.keepStanding(ctx, r, standingOf[r.ID])
		} else {
			err = s.cancelAll(ctx, r.ID, r.Status)
		}
		if err != nil {
			s.log.Error("reconciling a recipient", "recipient", r.ID, "err", err)
		}
	}
	for _, id := range orphans {
		if err := s.cancelAll(ctx, id, store.StatusStopped); err != nil {
			s.log.Error("reconciling a recipient", "recipient", id, "err", err)
		}
	}
	return nil
}

func refKey(kind string, params json.RawMessage) (string, error) {
	c, err := canonical(params)
	if err != nil {
		return "", err
	}
	return kind + "\x00" + c, nil
}

// canonical re-encodes JSON with sorted keys, so equal params compare
// equal however they were written.
func canonical(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("params are not JSON: %w", err)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Get returns a recipient.
func (s *Service) Get(ctx context.Context, id string) (store.RecipientRecord, error) {
	if !store.ValidRecipientID(id) {
		return store.RecipientRecord{}, &api.Error{Code: api.CodeInvalidRecipient, Field: "id", Message: store.RecipientIDGrammar}
	}
	return s.store.GetRecipient(ctx, id)
}

// Deleter removes a recipient's record.
type Deleter interface {
	DeleteRecipient(ctx context.Context, id string) error
}

// Delete stops a recipient (cancelling its pending watches) and removes
// its record; its stored messages go with the retention. A later watch
// naming the same id creates it anew.
func (s *Service) Delete(ctx context.Context, id string) error {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	rec.Status = store.StatusStopped
	rec.UpdatedAt = s.clock.Now().UTC()
	if _, _, err := s.store.PutRecipient(ctx, rec); err != nil {
		return err
	}
	if err := s.Reconcile(ctx, id); err != nil {
		return err
	}
	d, ok := s.store.(Deleter)
	if !ok {
		return errors.New("recipients: the store cannot delete")
	}
	return d.DeleteRecipient(ctx, id)
}
