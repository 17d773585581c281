package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
)

// Raw export and import of the bucket's logical records (store.Record),
// for `vigil store copy`: the same records as badger's, key by key, with
// the bucket's token keys translated to a record's parts and back. Two
// things differ from badger's layout, and are translated here:
//   - rp.<rid>.<id> (a recipient's pending rows) and pc.<rid> (how many)
//     have no badger counterpart: they are not exported, and an import
//     writes the rp. entry beside every pending row it imports (a row's
//     record names its recipient) and deletes the recipient's count, which
//     its next use lists again;
//   - ma., pa. and ol. carry their recipient as value (a long
//     recipient's token is a hash): exported as a record with no value,
//     as badger keeps them, imported with the recipient as value.
//
// A token longer than 160 characters is a hash (tok), not the name
// itself; an export learns such names from the values that carry them
// (a recipient's record, a row, a push, an event, a Work item) and
// refuses, with ErrUntranslatable, a key whose name it cannot learn.

// ErrUntranslatable: a key holding a hashed name that no record carries,
// so its record cannot be written to another backend.
var ErrUntranslatable = errors.New("natsstore: a key's name is hashed and no record carries it")

// importBatch bounds the records one ImportRecords commit holds: with the
// rp. entry and the count key's reset its pending rows add, the batch
// stays under maxBatch.
const importBatch = maxBatch / 3

var natsFamilies = map[string]store.Family{
	"w": store.FamRow, "s": store.FamState, "r": store.FamRecipientIndex, "pk": store.FamPendingKind,
	"sj": store.FamSubject, "mb": store.FamMessage, "ms": store.FamMailSeq, "ob": store.FamPush,
	"ol": store.FamLivePush, "sa": store.FamSettledAt, "ma": store.FamMessageAt, "pa": store.FamPushAt,
	"ev": store.FamEvent, "ek": store.FamEventKey, "es": store.FamEventSeq, "wk": store.FamWork,
	"wi": store.FamWorkInput, "wo": store.FamWorkOwner, "wsc": store.FamWorkScope, "rt": store.FamRouter,
	"rc": store.FamRecipient, "ik": store.FamIdem, "ia": store.FamIdemAt,
}

// ExportRecords calls fn with every record of the bucket, in the order
// the bucket holds them (by write, not by key). It reads the bucket
// twice through a watch (each), first for the names hashed tokens stand
// for, then for the records, holding no more than those names in
// memory. Each key is read as it was when the watch reached it, not all
// at one instant, so the source of a copy must not be served meanwhile.
func (s *Store) ExportRecords(ctx context.Context, fn func(store.Record) error) error {
	names := map[string]string{}
	learn := func(n string) {
		if t := tok(n); strings.HasPrefix(t, "=h") {
			names[t] = n
		}
	}
	if err := s.each(ctx, func(e kvEntry) error { learnNames(e, learn); return nil }); err != nil {
		return err
	}
	return s.each(ctx, func(e kvEntry) error {
		if e.key == metaKey || strings.HasPrefix(e.key, "rp.") || strings.HasPrefix(e.key, "pc.") ||
			strings.HasPrefix(e.key, "ep.") || strings.HasPrefix(e.key, "ef.") {
			return nil
		}
		r, err := parseNatsKey(e.key, names)
		if err != nil {
			return err
		}
		switch r.Family {
		case store.FamMessageAt, store.FamPushAt, store.FamLivePush:
			// The value is the recipient, which the record names.
		default:
			if len(e.val) > 0 {
				r.Value = e.val
			}
		}
		return fn(r)
	})
}

// each calls fn with every live key of the bucket and its value, as a
// watch delivers them, and returns once the watch has delivered what was
// there when it started.
func (s *Store) each(ctx context.Context, fn func(kvEntry) error) error {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("natsstore: reading the bucket: %w", err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("natsstore: reading the bucket: the watch ended early")
			}
			if e == nil {
				return nil
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if err := fn(kvEntry{key: e.Key(), val: e.Value(), rev: e.Revision()}); err != nil {
				return err
			}
		}
	}
}

// learnNames passes each free-form name e's value carries to learn.
func learnNames(e kvEntry, learn func(string)) {
	fam := e.key
	if i := strings.IndexByte(fam, '.'); i >= 0 {
		fam = fam[:i]
	}
	var v struct {
		ID        json.RawMessage `json:"id"`
		Recipient json.RawMessage `json:"recipient"`
		Kind      string          `json:"kind"`
		Subject   string          `json:"subject"`
		Stream    string          `json:"stream"`
		Key       string          `json:"key"`
		Scope     string          `json:"scope"`
		ThreadKey string          `json:"thread_key"`
		Principal string          `json:"principal"`
	}
	str := func(raw json.RawMessage) {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			learn(s)
		}
	}
	switch fam {
	case "ma", "pa", "ol":
		learn(string(e.val))
		return
	case "rc", "w", "ob", "ev", "wk", "ik":
	default:
		return
	}
	if json.Unmarshal(e.val, &v) != nil {
		return
	}
	str(v.ID)
	str(v.Recipient)
	var rr struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(v.Recipient, &rr) == nil {
		learn(rr.ID)
	}
	for _, n := range []string{v.Kind, v.Subject, v.Stream, v.Key, v.Scope, v.Key, v.ThreadKey, v.Principal} {
		learn(n)
	}
}

// parseNatsKey undoes the key functions of this package.
func parseNatsKey(key string, names map[string]string) (store.Record, error) {
	bad := func() (store.Record, error) {
		return store.Record{}, fmt.Errorf("%w: key %q", store.ErrUnknownRecord, key)
	}
	parts := strings.Split(key, ".")
	fam, ok := natsFamilies[parts[0]]
	if !ok {
		return bad()
	}
	r := store.Record{Family: fam}
	p := parts[1:]
	var err error
	name := func(t string) string {
		if err != nil {
			return ""
		}
		var n string
		n, err = untokName(t, names)
		if err != nil {
			err = fmt.Errorf("key %q: %w", key, err)
		}
		return n
	}
	id := func(t string) bool {
		var e error
		r.ID, e = store.ParseID(t)
		return e == nil
	}
	n := map[store.Family]int{
		store.FamRow: 1, store.FamWork: 1, store.FamState: 2, store.FamRecipientIndex: 2, store.FamPendingKind: 2,
		store.FamSubject: 1, store.FamMailSeq: 1, store.FamEventSeq: 1, store.FamWorkOwner: 1, store.FamRouter: 1,
		store.FamRecipient: 1, store.FamMessage: 2, store.FamPush: 2, store.FamLivePush: 2, store.FamEvent: 2,
		store.FamSettledAt: 2, store.FamMessageAt: 3, store.FamPushAt: 3, store.FamEventKey: 2,
		store.FamWorkInput: 2, store.FamWorkScope: 3, store.FamIdem: 2, store.FamIdemAt: 3,
	}[fam]
	if len(p) != n {
		return bad()
	}
	switch fam {
	case store.FamRow, store.FamWork:
		ok = id(p[0])
	case store.FamState:
		r.Sub, ok = p[0], id(p[1])
	case store.FamRecipientIndex, store.FamPendingKind:
		r.Name, ok = name(p[0]), id(p[1])
	case store.FamSubject, store.FamMailSeq, store.FamEventSeq, store.FamWorkOwner, store.FamRouter, store.FamRecipient:
		r.Name = name(p[0])
	case store.FamMessage, store.FamPush, store.FamLivePush, store.FamEvent:
		r.Name = name(p[0])
		r.Seq, ok = parseHex16(p[1])
	case store.FamSettledAt:
		r.At, ok = parseTimeTok(p[0])
		ok = ok && id(p[1])
	case store.FamMessageAt, store.FamPushAt:
		r.At, ok = parseTimeTok(p[0])
		r.Name = name(p[1])
		var okSeq bool
		r.Seq, okSeq = parseHex16(p[2])
		ok = ok && okSeq
	case store.FamEventKey, store.FamIdem:
		r.Name, r.Sub = name(p[0]), name(p[1])
	case store.FamIdemAt:
		r.At, ok = parseTimeTok(p[0])
		r.Name, r.Sub = name(p[1]), name(p[2])
	case store.FamWorkInput:
		ok = id(p[0])
		n, e := strconv.ParseUint(p[1], 16, 32)
		ok = ok && e == nil && len(p[1]) == 8
		r.Seq = n
	case store.FamWorkScope:
		r.Name, r.Sub, ok = name(p[0]), p[1], id(p[2])
	}
	if err != nil {
		return store.Record{}, err
	}
	if !ok {
		return bad()
	}
	return r, nil
}

// untokName undoes tok, a hashed token through names.
func untokName(t string, names map[string]string) (string, error) {
	if strings.HasPrefix(t, "=h") {
		if n, ok := names[t]; ok {
			return n, nil
		}
		return "", fmt.Errorf("%w: %s", ErrUntranslatable, t)
	}
	n, ok := untok(t)
	if !ok {
		return "", fmt.Errorf("%w: token %q", store.ErrUnknownRecord, t)
	}
	return n, nil
}

// natsKey is r's key here: the key functions of this package.
func natsKey(r store.Record) (string, error) {
	switch r.Family {
	case store.FamRow:
		return rowKey(r.ID), nil
	case store.FamState:
		return stateKey(store.State(r.Sub), r.ID), nil
	case store.FamRecipientIndex:
		return recipientKey(r.Name, r.ID), nil
	case store.FamPendingKind:
		return pendingKindKey(r.Name, r.ID), nil
	case store.FamSubject:
		return subjectKey(r.Name), nil
	case store.FamMessage:
		return mailKey(r.Name, r.Seq), nil
	case store.FamMailSeq:
		return mailSeqKey(r.Name), nil
	case store.FamPush:
		return pushKey(r.Name, r.Seq), nil
	case store.FamLivePush:
		return livePushKey(r.Name, r.Seq), nil
	case store.FamSettledAt:
		return "sa." + hex16(uint64(r.At)^(1<<63)) + "." + r.ID.String(), nil
	case store.FamMessageAt:
		return "ma." + hex16(uint64(r.At)^(1<<63)) + "." + tok(r.Name) + "." + hex16(r.Seq), nil
	case store.FamPushAt:
		return "pa." + hex16(uint64(r.At)^(1<<63)) + "." + tok(r.Name) + "." + hex16(r.Seq), nil
	case store.FamEvent:
		return eventKey(r.Name, r.Seq), nil
	case store.FamEventKey:
		return eventIndexKey(r.Name, r.Sub), nil
	case store.FamEventSeq:
		return eventSeqKey(r.Name), nil
	case store.FamWork:
		return workKey(r.ID), nil
	case store.FamWorkInput:
		return workInputKey(r.ID, int(r.Seq)), nil
	case store.FamWorkOwner:
		return workOwnerKey(r.Name), nil
	case store.FamWorkScope:
		return workScopeKey(r.Name, store.WorkState(r.Sub), r.ID), nil
	case store.FamRouter:
		return routerKey(r.Name), nil
	case store.FamRecipient:
		return recipientRecKey(r.Name), nil
	case store.FamIdem:
		return idemKey(r.Name, r.Sub), nil
	case store.FamIdemAt:
		return "ia." + hex16(uint64(r.At)^(1<<63)) + "." + tok(r.Name) + "." + tok(r.Sub), nil
	}
	return "", fmt.Errorf("%w: family %q", store.ErrUnknownRecord, r.Family)
}

// ImportRecords writes recs, as they are, in atomic batches of at most
// importBatch records (with the rp. entry of each pending row they
// hold), unconditionally: a record already there is overwritten by key,
// so importing a batch again is harmless. It checks nothing; it is for a
// copy into a bucket no node serves.
func (s *Store) ImportRecords(ctx context.Context, recs []store.Record) error {
	for len(recs) > 0 {
		n := min(len(recs), importBatch)
		if err := s.importBatch(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

func (s *Store) importBatch(ctx context.Context, recs []store.Record) error {
	t := s.newTxn(ctx)
	for _, r := range recs {
		k, err := natsKey(r)
		if err != nil {
			return err
		}
		v := r.Value
		switch r.Family {
		case store.FamMessageAt, store.FamPushAt, store.FamLivePush:
			v = []byte(r.Name)
		case store.FamRow:
			// A pending row's recipient index of pending rows; a row this
			// build cannot decode is held aside and has none, as here.
			if w, err := store.DecodeRow([]byte(k), r.Value); err == nil && w.State == store.Pending {
				t.put(recipientPendingKey(w.Recipient.ID, w.ID), nil)
				// Its count is listed again at its next use (pendingcount.go).
				t.del(pendingCountKey(w.Recipient.ID))
			}
		}
		t.put(k, v)
	}
	return t.commit("import")
}
