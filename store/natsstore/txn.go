package natsstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/vigilhq/vigil/store"
)

// The headers a commit uses. The batch headers are nats-server's atomic
// batch publish (2.12 and later); the expected-sequence pair is its
// optimistic concurrency on a subject's last sequence, which it checks
// per message inside a batch.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	hdrExpectSeq   = "Nats-Expected-Last-Subject-Sequence"
	hdrExpectSubj  = "Nats-Expected-Last-Subject-Sequence-Subject"
	hdrMsgID       = "Nats-Msg-Id"
	hdrTTL         = "Nats-TTL"
	hdrKVOp        = "KV-Operation"
)

// The server's error codes a commit tells apart.
const (
	codeWrongLastSeq         jetstream.ErrorCode = 10071 // an expected sequence did not hold
	codeWrongLastSeqConstant jetstream.ErrorCode = 10164 // a subject was in flight in another batch
	codeBatchIncomplete      jetstream.ErrorCode = 10176
	codeBatchDuplicate       jetstream.ErrorCode = 10201 // the batch's message id was committed already
	codeMsgIDInProcess       jetstream.ErrorCode = 10158 // the message id's first publish is still being stored
	codeBatchInflight        jetstream.ErrorCode = 10210
	codeClusterNotAvailable  jetstream.ErrorCode = 10008 // JetStream system temporarily unavailable
	codeClusterNoPeers       jetstream.ErrorCode = 10005 // no suitable peers for placement (yet)
)

// The server's error codes of a message it has no room for: the stream's
// own limits (JSStreamStoreFailedF with ErrMaxBytes or ErrMaxMsgs, which
// an operator sets on the bucket's stream: vigil sets neither, and the
// bucket's one message per key is kept by replacing, never refused), and
// the server's or account's JetStream storage (JSInsufficientResourcesErr;
// JSStorageResourcesExceededErr). Told apart by code, never by text.
const (
	codeStreamStoreFailed      jetstream.ErrorCode = 10077
	codeInsufficientResources  jetstream.ErrorCode = 10023
	codeStorageResourcesExceed jetstream.ErrorCode = 10047
)

// storageFull wraps err with store.ErrStorageFull when the server
// refused a message for want of room, and returns it as it is otherwise.
func storageFull(err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case codeStreamStoreFailed, codeInsufficientResources, codeStorageResourcesExceed:
			return fmt.Errorf("%w: %w", store.ErrStorageFull, err)
		}
	}
	return err
}

// The server's error codes that say it cannot serve now, which a write
// meets while a stream or the cluster has no leader or no quorum (a
// server lost, an election): store.ErrUnavailable, not a refusal.
const (
	codeClusterIncomplete    jetstream.ErrorCode = 10004 // incomplete results
	codeClusterNotLeader     jetstream.ErrorCode = 10009 // JetStream cluster can not handle request
	codeNotEnabledForAccount jetstream.ErrorCode = 10039 // JetStream not enabled for account (no meta leader yet)
	codeNotEnabled           jetstream.ErrorCode = 10076 // JetStream not enabled (a server restarting)
	// The bucket's stream not found: Open created or found it, so a
	// running store meets this only from a server that has not yet
	// learnt the cluster's streams again (restarted, its meta group not
	// caught up).
	codeStreamNotFound          jetstream.ErrorCode = 10059
	codeStreamOffline           jetstream.ErrorCode = 10118 // stream is offline
	codeStreamOfflineReason     jetstream.ErrorCode = 10194 // stream is offline: reason
	codeExpectedLastSeqNotReady jetstream.ErrorCode = 10163 // expected last sequence per subject temporarily unavailable
)

// maxBatch bounds the messages of one commit, below the server's default
// of 1000 per atomic batch.
const maxBatch = 900

// tombstoneTTL is how long a deleted key's marker stays. The marker is
// the key's last message, so a writer that read the key absent is still
// fenced by its sequence; once it expires the key has no message and a
// writer fenced on the marker is refused as on any change.
const tombstoneTTL = time.Hour

// maxInflight bounds one Store's batches in flight; nodes sharing a
// bucket can still reach the server's 50 together, and then retry.
const maxInflight = 32

// maxAttempts bounds how often a transition is re-run after losing its
// rows to another writer.
const maxAttempts = 16

// errConflict is a commit refused because a row it read changed: the
// transition runs again on what is there now.
var errConflict = errors.New("natsstore: a row changed since it was read")

// entry is one key as read: its value, and its revision (the stream
// sequence of its last message: a value or a delete marker; 0 when the
// key has no message at all).
type entry struct {
	val    []byte
	rev    uint64
	exists bool
}

// last reads a key from the stream leader.
func (s *Store) last(ctx context.Context, key string) (entry, error) {
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.stream.GetLastMsgForSubject(rctx, s.subj+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return entry{}, nil
	}
	if err != nil {
		return entry{}, unavailable(ctx, "reading "+key, fmt.Errorf("natsstore: reading %s: %w", key, err), false)
	}
	switch m.Header.Get(hdrKVOp) {
	case "DEL", "PURGE":
		return entry{rev: m.Sequence}, nil
	}
	return entry{val: m.Data, rev: m.Sequence, exists: true}, nil
}

// kvEntry is one key a scan found.
type kvEntry struct {
	key string // without the bucket's prefix
	val []byte // nil when the scan is metaOnly
	rev uint64
}

// scan returns the live keys matching pattern (a subject pattern below
// the bucket: "w.>", "r.<rid>.>") sorted by key, with their values
// unless metaOnly. It reads through a watch of the bucket, which ends
// once it has delivered the keys present when it started: a consistent
// view of each key, not of all of them at one instant.
func (s *Store) scan(ctx context.Context, pattern string, metaOnly bool) ([]kvEntry, error) {
	opts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if metaOnly {
		opts = append(opts, jetstream.MetaOnly())
	}
	w, err := s.kv.Watch(ctx, pattern, opts...)
	if err != nil {
		return nil, unavailable(ctx, "scanning "+pattern, fmt.Errorf("natsstore: scanning %s: %w", pattern, err), false)
	}
	var out []kvEntry
	err = drain(ctx, w, "scanning "+pattern, func(e kvEntry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b kvEntry) int { return strings.Compare(a.key, b.key) })
	return out, nil
}

// drain calls fn with each live key w delivers, until it has delivered
// the keys present when it started, and stops w.
func drain(ctx context.Context, w jetstream.KeyWatcher, what string, fn func(kvEntry) error) error {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return fmt.Errorf("natsstore: %s: the watch ended early", what)
			case e == nil:
				return nil
			case e.Operation() == jetstream.KeyValuePut:
				if err := fn(kvEntry{key: e.Key(), val: e.Value(), rev: e.Revision()}); err != nil {
					return err
				}
			}
		}
	}
}

// countKeys counts the live keys matching pattern, reading no values.
func (s *Store) countKeys(ctx context.Context, pattern string) (int, error) {
	es, err := s.scan(ctx, pattern, true)
	return len(es), err
}

// txn is one transition: what it read, with each key's revision, and
// what it will write. commit sends the writes as one atomic batch in
// which every key that was read and is written must still be at the
// revision read, every fenced key too, and the batch commits whole or
// not at all.
type txn struct {
	ctx   context.Context
	s     *Store
	reads map[string]entry
	// writes in order; index by key in widx, so a key written twice is
	// one message carrying the last value.
	writes []write
	widx   map[string]int
	// fences are keys read and not written that must not have changed.
	fences []string
	// epoch, set by ownerOf, is the owner's fence on the row's partition:
	// the epoch key must still be at the owner's token.
	epoch *epochCheck
	// held is the stripe this transition's update holds, or nil;
	// update releases it when it returns, so the runs after the first
	// are under it from their start.
	held *held
	// err is a write this transition could not make (a key of no
	// family): its commit fails with it.
	err error
}

// held is the one stripe an update holds across its runs.
type held struct{ mu *sync.Mutex }

func (h *held) release() {
	if h.mu != nil {
		h.mu.Unlock()
		h.mu = nil
	}
}

type write struct {
	key string
	val []byte
	del bool
}

func (s *Store) newTxn(ctx context.Context) *txn {
	return &txn{ctx: ctx, s: s, reads: map[string]entry{}, widx: map[string]int{}}
}

// serialise takes mu for the rest of this transition's update, if the
// update holds no stripe yet: what the run read before taking it may be
// stale, so its commit may lose once, and the runs after it are under
// mu from their start. A transition outside update (an import) takes
// nothing.
func (t *txn) serialise(mu *sync.Mutex) {
	if t.held == nil || t.held.mu != nil {
		return
	}
	mu.Lock()
	t.held.mu = mu
}

// get reads key as this transition sees it: its own write first, else
// what it read before, else the key now.
func (t *txn) get(key string) (entry, error) {
	if i, ok := t.widx[key]; ok {
		w := t.writes[i]
		if w.del {
			return entry{}, nil
		}
		return entry{val: w.val, exists: true}, nil
	}
	if e, ok := t.reads[key]; ok {
		return e, nil
	}
	e, err := t.s.last(t.ctx, key)
	if err != nil {
		return entry{}, err
	}
	t.reads[key] = e
	return e, nil
}

// prefetch reads keys this transition will get, all at once instead of
// one round trip after another; get then answers them from what was
// read. A key already read or written is left as it is.
func (t *txn) prefetch(keys ...string) error {
	var todo []string
	for _, k := range keys {
		_, read := t.reads[k]
		_, written := t.widx[k]
		if !read && !written && !slices.Contains(todo, k) {
			todo = append(todo, k)
		}
	}
	got := make([]entry, len(todo))
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, k := range todo {
		wg.Go(func() { got[i], errs[i] = t.s.last(t.ctx, k) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, k := range todo {
		t.reads[k] = got[i]
	}
	return nil
}

func (t *txn) put(key string, val []byte) { t.set(write{key: key, val: val}) }

func (t *txn) del(key string) { t.set(write{key: key, del: true}) }

func (t *txn) set(w write) {
	if i, ok := t.widx[w.key]; ok {
		t.writes[i] = w
		return
	}
	t.widx[w.key] = len(t.writes)
	t.writes = append(t.writes, w)
}

// fence makes the commit conditional on key, which the transition read
// (get) and does not write, still being at the revision read: a decision
// taken on it (the recipient is running) holds when the batch commits.
func (t *txn) fence(key string) {
	if !slices.Contains(t.fences, key) {
		t.fences = append(t.fences, key)
	}
}

// msgs builds the batch. A write of a key the transition read carries
// that key's revision as its expected last sequence; a write of a key it
// never read (an index entry named by a row it did read) carries none,
// and carries a fence instead, on the expected-sequence header's subject
// override; a fence left over is a rewrite of its key as read, expected
// at its revision. The owner's fence (epoch) takes such a write left
// after the fences, or else a carrier message of its own, so it never
// makes a fenced key be rewritten.
func (t *txn) msgs() []*nats.Msg {
	fences := slices.Clone(t.fences)
	epoch := t.epoch
	var out []*nats.Msg
	for _, w := range t.writes {
		m := nats.NewMsg(t.s.subj + w.key)
		if w.del {
			m.Header.Set(hdrKVOp, "DEL")
			m.Header.Set(hdrTTL, strconv.Itoa(int(tombstoneTTL/time.Second)))
		} else {
			m.Data = w.val
		}
		if e, read := t.reads[w.key]; read {
			m.Header.Set(hdrExpectSeq, strconv.FormatUint(e.rev, 10))
		} else if len(fences) > 0 {
			f := fences[0]
			fences = fences[1:]
			m.Header.Set(hdrExpectSeq, strconv.FormatUint(t.reads[f].rev, 10))
			m.Header.Set(hdrExpectSubj, t.s.subj+f)
		} else if epoch != nil {
			m.Header.Set(hdrExpectSeq, strconv.FormatUint(epoch.token, 10))
			m.Header.Set(hdrExpectSubj, t.s.subj+epochKey(epoch.p))
			epoch = nil
		}
		out = append(out, m)
	}
	for _, f := range fences {
		e := t.reads[f]
		m := nats.NewMsg(t.s.subj + f)
		if e.exists {
			m.Data = e.val
		} else {
			m.Header.Set(hdrKVOp, "DEL")
			m.Header.Set(hdrTTL, strconv.Itoa(int(tombstoneTTL/time.Second)))
		}
		m.Header.Set(hdrExpectSeq, strconv.FormatUint(e.rev, 10))
		out = append(out, m)
	}
	if epoch != nil {
		// No write left to carry the owner's fence: a delete marker of
		// the partition's carrier key does (the epoch key itself cannot
		// be rewritten: that would move the token).
		m := nats.NewMsg(t.s.subj + carrierKey(epoch.p))
		m.Header.Set(hdrKVOp, "DEL")
		m.Header.Set(hdrTTL, strconv.Itoa(int(tombstoneTTL/time.Second)))
		m.Header.Set(hdrExpectSeq, strconv.FormatUint(epoch.token, 10))
		m.Header.Set(hdrExpectSubj, t.s.subj+epochKey(epoch.p))
		out = append(out, m)
	}
	return out
}

// commit sends the batch and waits for the server's answer: nil once
// the batch is stored (by a quorum of replicas), errConflict when a
// revision did not hold and nothing was stored.
func (t *txn) commit(kind string) error {
	if t.err != nil {
		return t.err
	}
	if len(t.writes) == 0 && len(t.fences) == 0 {
		return nil
	}
	if fp := t.s.failpoint; fp != nil {
		if err := fp(kind); err != nil {
			return err
		}
	}
	msgs := t.msgs()
	if len(msgs) > maxBatch {
		return fmt.Errorf("natsstore: a commit of %d keys, more than %d", len(msgs), maxBatch)
	}
	id := nuid.Next()
	// The first message carries the batch's message id: the server checks
	// it before any expected sequence, so a batch sent again after an
	// unanswered commit is recognised as committed, never applied twice.
	msgs[0].Header.Set(hdrMsgID, "vigil-"+id)
	// unanswered is set once an attempt was sent and got no answer: the
	// batch may be stored, whatever the later attempts are told.
	unanswered := false
	for attempt := 0; ; attempt++ {
		err := t.s.publish(t.ctx, id, msgs)
		if err == nil && t.s.loseAnswer != nil && t.s.loseAnswer() {
			err = nats.ErrTimeout // stored, and the answer lost on its way
		}
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &apiErr):
			switch apiErr.ErrorCode {
			case codeWrongLastSeq, codeWrongLastSeqConstant:
				return errConflict
			case codeBatchDuplicate:
				if attempt > 0 {
					return nil // the unanswered attempt had committed
				}
				return err
			case codeMsgIDInProcess:
				// The unanswered attempt is still being stored: whether
				// it commits is not known yet. Ask again a moment later
				// (the server then answers that it committed, or takes
				// this one), and past that the outcome is unknown.
				unanswered = true
				if attempt < 8 {
					if err := t.s.clock.Sleep(t.ctx, time.Duration(attempt+1)*20*time.Millisecond); err != nil {
						return err
					}
					continue
				}
				return &store.UnavailableError{Op: "commit " + kind, MayHaveWritten: true, Err: fmt.Errorf("natsstore: commit: %w", err)}
			case codeBatchIncomplete, codeBatchInflight:
				// The stream holds as many open batches as it allows
				// (other nodes' among them), and drops a batch's first
				// messages past that, so its commit finds it incomplete:
				// wait a little and send it whole again, then tell the
				// caller the store is busy.
				if attempt < 8 {
					if err := t.s.clock.Sleep(t.ctx, time.Duration(attempt+1)*5*time.Millisecond); err != nil {
						return err
					}
					continue
				}
				busy := fmt.Errorf("natsstore: commit: %w (%w)", store.ErrBusy, err)
				if unanswered {
					return &store.UnavailableError{Op: "commit " + kind, MayHaveWritten: true, Err: busy}
				}
				return busy
			}
			// A refusal: this attempt stored nothing (for want of room, a
			// storage-full error); an earlier one that got no answer may
			// have.
			return unavailable(t.ctx, "commit "+kind, fmt.Errorf("natsstore: commit: %w", storageFull(err)), unanswered)
		case t.ctx.Err() != nil:
			return t.ctx.Err()
		}
		if !noResponders(err) {
			unanswered = true
		}
		if attempt < 2 {
			// No answer (a timeout, a leader change): the batch may have
			// committed. Sent again under a new batch id, its first
			// message's id tells.
			id = nuid.Next()
			continue
		}
		return unavailable(t.ctx, "commit "+kind, fmt.Errorf("natsstore: commit: %w", err), unanswered)
	}
}

// unreachable says whether err means JetStream could not be reached or
// gave no answer (no server, no responders, a request that timed out, a
// connection closed or reconnecting), or answered that it cannot serve
// now (the cluster or the stream without a leader or a quorum): the
// store is unavailable, as opposed to refusing the request. Told by type
// and by the server's error code, never by text.
func unreachable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case codeClusterNotAvailable, codeClusterIncomplete, codeClusterNotLeader, codeNotEnabledForAccount, codeNotEnabled,
			codeStreamOffline, codeStreamOfflineReason, codeExpectedLastSeqNotReady, codeStreamNotFound:
			return true
		}
		// The server's own "service unavailable" (its HTTP-like status).
		return apiErr.Code == 503
	}
	for _, e := range []error{
		nats.ErrNoServers, nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse,
		context.DeadlineExceeded, nats.ErrConnectionClosed, nats.ErrConnectionDraining,
		nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrStaleConnection,
		nats.ErrReconnectBufExceeded, jetstream.ErrNoHeartbeat,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// noResponders says whether err is a request that reached no server:
// nothing of it can have been stored.
func noResponders(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrReconnectBufExceeded)
}

// unavailable wraps err in a *store.UnavailableError (errors.Is
// store.ErrUnavailable) when it is unreachable, saying whether a commit
// may have been stored; err as it is otherwise, and when ctx itself has
// ended (the caller gave up; nothing to tell it).
func unavailable(ctx context.Context, op string, err error, mayHaveWritten bool) error {
	if err == nil || ctx.Err() != nil || !unreachable(err) {
		return err
	}
	return &store.UnavailableError{Op: op, MayHaveWritten: mayHaveWritten, Err: err}
}

// publish sends msgs as one atomic batch and returns the server's answer
// to the last. One message is a batch too: a plain publish checks its
// expected sequence before its message id, so a resend after a lost
// answer would be refused as stale instead of recognised as stored.
func (s *Store) publish(ctx context.Context, id string, msgs []*nats.Msg) error {
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	case <-ctx.Done():
		return ctx.Err()
	}
	for i, m := range msgs {
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		if i < len(msgs)-1 {
			m.Header.Del(hdrBatchCommit)
			if err := s.nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		m.Header.Set(hdrBatchCommit, "1")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, err := s.js.PublishMsg(ctx, msgs[len(msgs)-1])
	return err
}

// update runs f in a transition and commits it, running f again on what
// is there now each time the commit loses a race for its rows. f must
// set its results afresh on each run.
func (s *Store) update(ctx context.Context, kind string, f func(t *txn) error) error {
	var h held
	defer h.release()
	return s.updateHeld(ctx, kind, &h, f)
}

// updateHeld is update with the stripe h holds (or will), released by
// the caller.
func (s *Store) updateHeld(ctx context.Context, kind string, h *held, f func(t *txn) error) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := s.newTxn(ctx)
		t.held = h
		if err := f(t); err != nil {
			return err
		}
		err := t.commit(kind)
		if !errors.Is(err, errConflict) {
			return err
		}
		if t.epoch != nil {
			// Refused by a row or by the owner's fence: a fence moved on
			// refuses every run again, so it ends here.
			if err := s.stillOwner(ctx, t.epoch); err != nil {
				return err
			}
		}
		if attempt == maxAttempts-1 {
			return fmt.Errorf("natsstore: %s: %w (%d attempts)", kind, store.ErrBusy, maxAttempts)
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// backoff waits before a transition runs again after losing a race: not
// at all the first time (the row changed: the next run sees the change),
// then a random time up to 1 ms doubling to 64 ms. A clustered stream
// refuses a check on a subject another batch in flight checks until that
// batch is applied, and re-running at once would spend the attempts
// inside that window. It paces a network retry and decides nothing, so
// it waits on the runtime's timer, not on an injected clock.
func backoff(ctx context.Context, attempt int) error {
	if attempt == 0 {
		return nil
	}
	d := time.Duration(rand.Int64N(int64(time.Millisecond << min(attempt-1, 6))))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// view runs f on reads alone.
func (s *Store) view(ctx context.Context, f func(t *txn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f(s.newTxn(ctx))
}
