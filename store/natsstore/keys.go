package natsstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vigilhq/vigil/store"
)

// The key layout, the one every release before the seam wrote: a
// family's prefix and its parts, dot-separated, each part one subject
// token: an id as its 26-character text (which sorts as the ids do), a
// sequence as 16 hex digits (a Work input's number as 8), a time as 16
// hex digits that sort as the times do, a state as it is, and any other
// name as tok makes it (unpadded base64url; a long one as a hash, kept
// one way: store.Key.OneWay).
//
//	w.<id>                              rows
//	s.<state>.<id>                      state index
//	r.<rid>.<id>                        recipient index
//	rp.<rid>.<id>                       a recipient's pending rows (Plan.RecipientPending)
//	pc.<rid>                            a recipient's count of pending rows
//	pk.<kind>.<id>                      pending rows by kind
//	sj.<subject>                        a subject's pending ids
//	mb.<rid>.<seq>                      mailbox messages
//	ms.<rid>                            a mailbox's last seq
//	ob.<rid>.<seq>                      outbox
//	ol.<rid>.<seq>                      the outbox's live pushes (value: rid)
//	sa.<time>.<id>                      rows by settled_at
//	ma.<time>.<rid>.<seq>               messages by at (value: rid)
//	pa.<time>.<rid>.<seq>               final pushes by when (value: rid)
//	ev.<stream>.<seq>                   events
//	ek.<stream>.<key>                   an event's seq by its key
//	es.<stream>                         a stream's last seq
//	wk.<id>                             Work
//	wi.<id>.<n>                         a Work's inputs
//	wo.<thread>                         a thread's Work
//	wsc.<scope>.<state>.<id>            Work by scope and state
//	rt.<router>                         a router's cursor
//	rc.<rid>                            recipients
//	ik.<principal>.<key>                idempotency records
//	ia.<time>.<principal>.<key>         idempotency records by time
//	du.<bucket>.<time>.<id>             pending rows by due time, in buckets (Plan.DueBucket)
//	pkv, due, tix                       markers: their names alone
//	meta, ep.<p>, ef.<p>                this package's own (metadata, fences)
//
// The families whose keys carry no value of the domain's
// (store.KeysAlone: ol., ma., pa.) keep their recipient as their value,
// so a scan reads it back whole where the key holds it one way.

// tokKind is how a part is one token.
type tokKind uint8

const (
	tkID tokKind = iota
	tkName
	tkRaw
	tkSeq
	tkSeq32
	tkTime
)

type nseg struct {
	p store.Part
	k tokKind
}

type nlayout struct {
	pfx  string
	segs []nseg
}

var (
	nID    = nseg{store.PartID, tkID}
	nName  = nseg{store.PartName, tkName}
	nSub   = nseg{store.PartSub, tkName}
	nState = nseg{store.PartSub, tkRaw}
	nSeq   = nseg{store.PartSeq, tkSeq}
	nAt    = nseg{store.PartAt, tkTime}
)

var layouts = map[store.Family]nlayout{
	store.FamRow:              {"w", []nseg{nID}},
	store.FamState:            {"s", []nseg{nState, nID}},
	store.FamRecipientIndex:   {"r", []nseg{nName, nID}},
	store.FamRecipientPending: {"rp", []nseg{nName, nID}},
	store.FamPendingCount:     {"pc", []nseg{nName}},
	store.FamPendingKind:      {"pk", []nseg{nName, nID}},
	store.FamSubject:          {"sj", []nseg{nName}},
	store.FamMessage:          {"mb", []nseg{nName, nSeq}},
	store.FamMailSeq:          {"ms", []nseg{nName}},
	store.FamPush:             {"ob", []nseg{nName, nSeq}},
	store.FamLivePush:         {"ol", []nseg{nName, nSeq}},
	store.FamSettledAt:        {"sa", []nseg{nAt, nID}},
	store.FamMessageAt:        {"ma", []nseg{nAt, nName, nSeq}},
	store.FamPushAt:           {"pa", []nseg{nAt, nName, nSeq}},
	store.FamEvent:            {"ev", []nseg{nName, nSeq}},
	store.FamEventKey:         {"ek", []nseg{nName, nSub}},
	store.FamEventSeq:         {"es", []nseg{nName}},
	store.FamWork:             {"wk", []nseg{nID}},
	store.FamWorkInput:        {"wi", []nseg{nID, {store.PartSeq, tkSeq32}}},
	store.FamWorkOwner:        {"wo", []nseg{nName}},
	store.FamWorkScope:        {"wsc", []nseg{nName, nState, nID}},
	store.FamRouter:           {"rt", []nseg{nName}},
	store.FamRecipient:        {"rc", []nseg{nName}},
	store.FamIdem:             {"ik", []nseg{nName, nSub}},
	store.FamIdemAt:           {"ia", []nseg{nAt, nName, nSub}},
	store.FamDue:              {"du", []nseg{nSeq, nAt, nID}},
	store.FamToken:            {"tk", []nseg{nName}},
	store.FamPendingKey:       {"pq", []nseg{nName, nSub, nID}},
	store.FamMarker:           {"", []nseg{{store.PartName, tkRaw}}},
}

// familyOf is the family whose keys begin with pfx.
func familyOf(pfx string) (store.Family, bool) {
	for f, l := range layouts {
		if l.pfx == pfx && pfx != "" {
			return f, true
		}
	}
	return "", false
}

// keyString is k's first n parts (all of them: the key; fewer: the
// tokens every key with them begins with, without a trailing dot).
func keyString(k store.Key, n int) (string, error) {
	l, ok := layouts[k.Fam]
	if !ok {
		return "", fmt.Errorf("%w: family %q", store.ErrUnknownRecord, k.Fam)
	}
	var b strings.Builder
	b.WriteString(l.pfx)
	for i, s := range l.segs[:min(n, len(l.segs))] {
		if i > 0 || l.pfx != "" {
			b.WriteByte('.')
		}
		switch s.k {
		case tkID:
			b.WriteString(k.ID.String())
		case tkSeq:
			b.WriteString(hex16(k.Seq))
		case tkSeq32:
			fmt.Fprintf(&b, "%08x", uint32(k.Seq))
		case tkTime:
			b.WriteString(timeTok(k.At))
		case tkRaw, tkName:
			name, bit := k.Name, store.OneWayName
			if s.p == store.PartSub {
				name, bit = k.Sub, store.OneWaySub
			}
			switch {
			case s.k == tkRaw:
				b.WriteString(name)
			case k.OneWay&bit != 0:
				b.WriteString(name) // the one-way token itself
			default:
				b.WriteString(tok(name))
			}
		}
	}
	return b.String(), nil
}

// keyOf is k's key.
func keyOf(k store.Key) (string, error) { return keyString(k, len(layouts[k.Fam].segs)) }

// pattern is the subject pattern of r's keys, below the bucket.
func pattern(r store.Range) (string, error) {
	l, ok := layouts[r.Prefix.Fam]
	if !ok {
		return "", fmt.Errorf("%w: family %q", store.ErrUnknownRecord, r.Prefix.Fam)
	}
	if r.Fixed >= len(l.segs) {
		return keyOf(r.Prefix)
	}
	p, err := keyString(r.Prefix, r.Fixed)
	if err != nil || p == "" {
		return ">", err // a marker is its name alone: every key, read back and filtered
	}
	return p + ".>", nil
}

// parseKey reads a key back; false for one of no family this build
// knows, or one its layout does not fit. val is the key's value, which
// names the recipient of a key of the store.KeysAlone families.
func parseKey(key string, val []byte) (store.Key, bool) {
	if store.IsMarker(key) {
		return store.Key{Fam: store.FamMarker, Name: key}, true
	}
	parts := strings.Split(key, ".")
	fam, ok := familyOf(parts[0])
	if !ok {
		return store.Key{}, false
	}
	l := layouts[fam]
	if len(parts) != len(l.segs)+1 {
		return store.Key{}, false
	}
	k := store.Key{Fam: fam}
	for i, s := range l.segs {
		t := parts[i+1]
		switch s.k {
		case tkID:
			id, err := store.ParseID(t)
			if err != nil {
				return k, false
			}
			k.ID = id
		case tkSeq:
			if k.Seq, ok = parseHex16(t); !ok {
				return k, false
			}
		case tkSeq32:
			n, err := strconv.ParseUint(t, 16, 32)
			if err != nil || len(t) != 8 {
				return k, false
			}
			k.Seq = n
		case tkTime:
			if k.At, ok = parseTimeTok(t); !ok {
				return k, false
			}
		case tkRaw, tkName:
			name, oneWay := t, false
			if s.k == tkName {
				if strings.HasPrefix(t, "=h") {
					oneWay = true
					if store.KeysAlone(fam) && len(val) > 0 {
						name, oneWay = string(val), false
					}
				} else if name, ok = untok(t); !ok {
					return k, false
				}
			}
			if s.p == store.PartSub {
				k.Sub = name
				if oneWay {
					k.OneWay |= store.OneWaySub
				}
			} else {
				k.Name = name
				if oneWay {
					k.OneWay |= store.OneWayName
				}
			}
		}
	}
	return k, true
}

// valueOf is what the bucket keeps under k for v: the recipient, for a
// key of the store.KeysAlone families.
func valueOf(k store.Key, v []byte) []byte {
	if store.KeysAlone(k.Fam) {
		if k.OneWay&store.OneWayName != 0 {
			return nil
		}
		return []byte(k.Name)
	}
	return v
}

// ownKey says whether key is this package's own, not a family's.
func ownKey(key string) bool {
	return key == metaKey || strings.HasPrefix(key, "ep.") || strings.HasPrefix(key, "ef.")
}
