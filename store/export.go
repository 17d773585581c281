package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Raw export and import of a store's logical records, for `vigil store
// copy` (package store/storecopy). A Record names a key by its parts, not
// by a backend's bytes, so each backend translates its own layout and a
// record read from one is written to another as it was: the same rows,
// index entries, mailbox and event seqs and values, byte for byte. Held
// aside rows are records like any other.

// Record is one stored record by its key's parts. Which parts a family
// uses is in the comments of the Fam constants: ID for an id, Name for
// the free-form part (a recipient, kind, subject, stream, thread, scope
// or router), Sub for the second one (a state, an event key), Seq for a
// sequence or a Work input's number, At for a time index's nanoseconds.
type Record struct {
	Family Family
	ID     ID
	Name   string
	Sub    string
	Seq    uint64
	At     int64
	Value  []byte
}

// ErrUnknownRecord: a key no family of this build names. A copy stops
// on it rather than leave it behind.
var ErrUnknownRecord = errors.New("store: a record of no known family")

// badgerPrefixes maps each family to its key prefix here.
var badgerPrefixes = map[string]Family{
	"w/": FamRow, "s/": FamState, "r/": FamRecipientIndex, "pk/": FamPendingKind, "sj/": FamSubject,
	"mb/": FamMessage, "ms/": FamMailSeq, "ob/": FamPush, "ol/": FamLivePush,
	"sa/": FamSettledAt, "ma/": FamMessageAt, "pa/": FamPushAt,
	"ev/": FamEvent, "ek/": FamEventKey, "es/": FamEventSeq,
	"wk/": FamWork, "wi/": FamWorkInput, "wo/": FamWorkOwner, "wsc/": FamWorkScope, "rt/": FamRouter,
	"rc/": FamRecipient, "ik/": FamIdem, "ia/": FamIdemAt,
}

// ExportRecords calls fn with every record of the store, in key order,
// from one read transaction (one instant of the store). The store
// version "v" and the pending-by-kind marker "pkv" are the store's own
// and not records: a destination writes its own.
func (s *Badger) ExportRecords(ctx context.Context, fn func(Record) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := it.Item().KeyCopy(nil)
			if bytes.Equal(k, versionKey) || bytes.Equal(k, pendingKindsMarker) {
				continue
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			r, err := parseBadgerKey(k)
			if err != nil {
				return err
			}
			if len(v) > 0 {
				r.Value = v
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// parseBadgerKey undoes the key functions of this package, family by
// family.
func parseBadgerKey(k []byte) (Record, error) {
	bad := func() (Record, error) { return Record{}, fmt.Errorf("%w: key %q", ErrUnknownRecord, k) }
	i := bytes.IndexByte(k, '/')
	if i < 0 {
		return bad()
	}
	fam, ok := badgerPrefixes[string(k[:i+1])]
	if !ok {
		return bad()
	}
	rest := k[i+1:]
	r := Record{Family: fam}
	// tailID takes the 16-byte id ending rest, after the separator sep.
	tailID := func(sep byte) ([]byte, bool) {
		if len(rest) < 17 || rest[len(rest)-17] != sep {
			return nil, false
		}
		copy(r.ID[:], rest[len(rest)-16:])
		return rest[:len(rest)-17], true
	}
	switch fam {
	case FamRow, FamWork:
		if len(rest) != 16 {
			return bad()
		}
		copy(r.ID[:], rest)
	case FamState:
		head, ok := tailID('/')
		if !ok {
			return bad()
		}
		r.Sub = string(head)
	case FamRecipientIndex:
		head, ok := tailID(0)
		if !ok {
			return bad()
		}
		r.Name = string(head)
	case FamPendingKind:
		head, ok := tailID('/')
		if !ok {
			return bad()
		}
		r.Name = string(head)
	case FamSubject, FamMailSeq, FamEventSeq, FamWorkOwner, FamRouter, FamRecipient:
		r.Name = string(rest)
	case FamMessage, FamPush, FamLivePush, FamEvent:
		name, seq, ok := splitPushKey(rest)
		if !ok {
			return bad()
		}
		r.Name, r.Seq = name, seq
	case FamSettledAt:
		if len(rest) != 8+16 {
			return bad()
		}
		r.At = int64(binary.BigEndian.Uint64(rest[:8]) ^ (1 << 63))
		copy(r.ID[:], rest[8:])
	case FamMessageAt, FamPushAt:
		if len(rest) < 8 {
			return bad()
		}
		r.At = int64(binary.BigEndian.Uint64(rest[:8]) ^ (1 << 63))
		name, seq, ok := splitPushKey(rest[8:])
		if !ok {
			return bad()
		}
		r.Name, r.Seq = name, seq
	case FamEventKey:
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			return bad()
		}
		r.Name, r.Sub = string(rest[:j]), string(rest[j+1:])
	case FamIdem, FamIdemAt:
		if fam == FamIdemAt {
			if len(rest) < 8 {
				return bad()
			}
			r.At = int64(binary.BigEndian.Uint64(rest[:8]) ^ (1 << 63))
			rest = rest[8:]
		}
		j := bytes.IndexByte(rest, 0)
		if j < 0 {
			return bad()
		}
		r.Name, r.Sub = string(rest[:j]), string(rest[j+1:])
	case FamWorkInput:
		if len(rest) != 16+4 {
			return bad()
		}
		copy(r.ID[:], rest[:16])
		r.Seq = uint64(binary.BigEndian.Uint32(rest[16:]))
	case FamWorkScope:
		head, ok := tailID(0)
		if !ok {
			return bad()
		}
		j := bytes.LastIndexByte(head, 0)
		if j < 0 {
			return bad()
		}
		r.Name, r.Sub = string(head[:j]), string(head[j+1:])
	}
	return r, nil
}

// badgerKey is r's key here: the key functions of this package.
func badgerKey(r Record) ([]byte, error) {
	switch r.Family {
	case FamRow:
		return rowKey(r.ID), nil
	case FamState:
		return stateKey(State(r.Sub), r.ID), nil
	case FamRecipientIndex:
		return recipientKey(r.Name, r.ID), nil
	case FamPendingKind:
		return pendingKindKey(r.Name, r.ID), nil
	case FamSubject:
		return subjectKey(r.Name), nil
	case FamMessage:
		return mailKey(r.Name, r.Seq), nil
	case FamMailSeq:
		return mailSeqKey(r.Name), nil
	case FamPush:
		return pushKeyOf(pushPfx, r.Name, r.Seq), nil
	case FamLivePush:
		return pushKeyOf(livePushPfx, r.Name, r.Seq), nil
	case FamSettledAt:
		return timeKeyNanos(settledAtPfx, r.At, r.ID[:]), nil
	case FamMessageAt:
		return timeKeyNanos(messageAtPfx, r.At, pushKeyOf(nil, r.Name, r.Seq)), nil
	case FamPushAt:
		return timeKeyNanos(pushAtPfx, r.At, pushKeyOf(nil, r.Name, r.Seq)), nil
	case FamEvent:
		return eventKey(r.Name, r.Seq), nil
	case FamEventKey:
		return eventIndexKey(r.Name, r.Sub), nil
	case FamEventSeq:
		return eventSeqKey(r.Name), nil
	case FamWork:
		return workKey(r.ID), nil
	case FamWorkInput:
		return workInputKey(r.ID, int(r.Seq)), nil
	case FamWorkOwner:
		return workOwnerKey(r.Name), nil
	case FamWorkScope:
		return workScopeKey(r.Name, WorkState(r.Sub), r.ID), nil
	case FamRouter:
		return routerKey(r.Name), nil
	case FamRecipient:
		return recipientRecKey(r.Name), nil
	case FamIdem:
		return idemKey(r.Name, r.Sub), nil
	case FamIdemAt:
		return timeKeyNanos(idemAtPfx, r.At, idemName(r.Name, r.Sub)), nil
	}
	return nil, fmt.Errorf("%w: family %q", ErrUnknownRecord, r.Family)
}

func timeKeyNanos(pfx []byte, nanos int64, rest []byte) []byte {
	k := make([]byte, 0, len(pfx)+8+len(rest))
	k = append(k, pfx...)
	k = binary.BigEndian.AppendUint64(k, uint64(nanos)^(1<<63))
	return append(k, rest...)
}

// ImportRecords writes recs, as they are, in one transaction: a record
// already there is overwritten by key, so importing a batch again is
// harmless. It checks nothing and indexes nothing (the records carry
// their index entries); it is for a copy into a store no one else uses,
// whose caches (pending counts, retention floors) it leaves as they were,
// so the store is to be closed and opened again before it is served.
//
// A batch too large for one badger transaction (large values) is
// written in halves.
func (s *Badger) ImportRecords(ctx context.Context, recs []Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.importTxn(ctx, recs)
	if errors.Is(err, badger.ErrTxnTooBig) && len(recs) > 1 {
		if err := s.ImportRecords(ctx, recs[:len(recs)/2]); err != nil {
			return err
		}
		return s.ImportRecords(ctx, recs[len(recs)/2:])
	}
	return err
}

func (s *Badger) importTxn(ctx context.Context, recs []Record) error {
	return s.update(ctx, func(txn *badger.Txn) error {
		for _, r := range recs {
			k, err := badgerKey(r)
			if err != nil {
				return err
			}
			if err := txn.Set(k, r.Value); err != nil {
				return err
			}
		}
		return nil
	})
}
