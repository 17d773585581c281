package badger

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/vigilhq/vigil/store"
)

// The key layout, byte for byte the one every release before the seam
// wrote: a family's prefix, then its parts, an id as its 16 bytes, a
// sequence as 8 big-endian bytes (a Work input's number as 4), a time as
// its nanoseconds' 8 bytes with the sign bit flipped (so they sort as
// the times do), a name as its bytes ended by a NUL or a '/' when a part
// follows it.
//
//	w/<id>                           rows
//	s/<state>/<id>                   state index
//	r/<recipient>\x00<id>            recipient index
//	rp/<recipient>\x00<id>           a recipient's pending rows (natsstore's plan; unused here)
//	pc/<recipient>                   a recipient's count of pending rows (natsstore's plan; unused here)
//	pk/<kind>/<id>                   pending rows by kind
//	sj/<subject>                     a subject's pending ids
//	mb/<recipient>\x00<seq>          mailbox messages
//	ms/<recipient>                   a mailbox's last seq
//	ob/<recipient>\x00<seq>          outbox
//	ol/<recipient>\x00<seq>          the outbox's live pushes
//	sa/<time><id>                    rows by settled_at
//	ma/<time><recipient>\x00<seq>    messages by at
//	pa/<time><recipient>\x00<seq>    final pushes by when they became final
//	ev/<stream>\x00<seq>             events
//	ek/<stream>\x00<key>             an event's seq by its key
//	es/<stream>                      a stream's last seq
//	wk/<id>                          Work
//	wi/<id><n>                       a Work's inputs
//	wo/<thread>                      a thread's Work
//	wsc/<scope>\x00<state>\x00<id>   Work by scope and state
//	rt/<router>                      a router's cursor
//	rc/<recipient>                   recipients
//	ik/<principal>\x00<key>          idempotency records
//	ia/<time><principal>\x00<key>    idempotency records by time
//	du/<bucket><time><id>            pending rows by due time (bucket 0: the plan has none)
//	pkv, due, tix                    markers: their names alone
//	v                                the store version (this package's own)

// seg is one part of a layout: fixed width w (an id, a sequence, a
// time), or variable (w 0, a name) followed by sep when a part follows.
type seg struct {
	p   store.Part
	w   int
	sep byte
}

// layout is a family's prefix and parts. splitLast says that of two
// names in a row, the second is the one that holds no separator (so the
// last separator splits them); else the first holds none.
type layout struct {
	pfx       string
	segs      []seg
	splitLast bool
}

var (
	segID   = seg{p: store.PartID, w: 16}
	segSeq  = seg{p: store.PartSeq, w: 8}
	segAt   = seg{p: store.PartAt, w: 8}
	segName = seg{p: store.PartName}
	segSub  = seg{p: store.PartSub}
	nul     = func(s seg) seg { s.sep = 0; return s }
	slash   = func(s seg) seg { s.sep = '/'; return s }
)

var layouts = map[store.Family]layout{
	store.FamRow:              {pfx: "w/", segs: []seg{segID}},
	store.FamState:            {pfx: "s/", segs: []seg{slash(segSub), segID}},
	store.FamRecipientIndex:   {pfx: "r/", segs: []seg{nul(segName), segID}},
	store.FamRecipientPending: {pfx: "rp/", segs: []seg{nul(segName), segID}},
	store.FamPendingCount:     {pfx: "pc/", segs: []seg{segName}},
	store.FamPendingKind:      {pfx: "pk/", segs: []seg{slash(segName), segID}},
	store.FamSubject:          {pfx: "sj/", segs: []seg{segName}},
	store.FamMessage:          {pfx: "mb/", segs: []seg{nul(segName), segSeq}},
	store.FamMailSeq:          {pfx: "ms/", segs: []seg{segName}},
	store.FamPush:             {pfx: "ob/", segs: []seg{nul(segName), segSeq}},
	store.FamLivePush:         {pfx: "ol/", segs: []seg{nul(segName), segSeq}},
	store.FamSettledAt:        {pfx: "sa/", segs: []seg{segAt, segID}},
	store.FamMessageAt:        {pfx: "ma/", segs: []seg{segAt, nul(segName), segSeq}},
	store.FamPushAt:           {pfx: "pa/", segs: []seg{segAt, nul(segName), segSeq}},
	store.FamEvent:            {pfx: "ev/", segs: []seg{nul(segName), segSeq}},
	store.FamEventKey:         {pfx: "ek/", segs: []seg{nul(segName), segSub}},
	store.FamEventSeq:         {pfx: "es/", segs: []seg{segName}},
	store.FamWork:             {pfx: "wk/", segs: []seg{segID}},
	store.FamWorkInput:        {pfx: "wi/", segs: []seg{segID, {p: store.PartSeq, w: 4}}},
	store.FamWorkOwner:        {pfx: "wo/", segs: []seg{segName}},
	store.FamWorkScope:        {pfx: "wsc/", segs: []seg{nul(segName), nul(segSub), segID}, splitLast: true},
	store.FamRouter:           {pfx: "rt/", segs: []seg{segName}},
	store.FamRecipient:        {pfx: "rc/", segs: []seg{segName}},
	store.FamIdem:             {pfx: "ik/", segs: []seg{nul(segName), segSub}},
	store.FamIdemAt:           {pfx: "ia/", segs: []seg{segAt, nul(segName), segSub}},
	store.FamDue:              {pfx: "du/", segs: []seg{segSeq, segAt, segID}},
	store.FamToken:            {pfx: "tk/", segs: []seg{segName}},
	store.FamPendingKey:       {pfx: "pq/", segs: []seg{nul(segName), nul(segSub), segID}, splitLast: true},
	store.FamMarker:           {segs: []seg{segName}},
}

// byPrefix is every family's prefix, for reading a key back.
var byPrefix = func() map[string]store.Family {
	m := map[string]store.Family{}
	for f, l := range layouts {
		if l.pfx != "" {
			m[l.pfx] = f
		}
	}
	return m
}()

// versionKey is the store version's key, this package's own.
var versionKey = []byte("v")

// appendKey appends k's first n parts (all of them: the whole key; fewer:
// the prefix of every key that has them) to b.
func appendKey(b []byte, k store.Key, n int) ([]byte, error) {
	l, ok := layouts[k.Fam]
	if !ok {
		return nil, fmt.Errorf("%w: family %q", store.ErrUnknownRecord, k.Fam)
	}
	if k.OneWay != 0 {
		return nil, fmt.Errorf("badger: a key with a one-way part (%q)", k.Fam)
	}
	b = append(b, l.pfx...)
	for i, s := range l.segs[:min(n, len(l.segs))] {
		switch s.p {
		case store.PartID:
			b = append(b, k.ID[:]...)
		case store.PartSeq:
			if s.w == 4 {
				b = binary.BigEndian.AppendUint32(b, uint32(k.Seq))
			} else {
				b = binary.BigEndian.AppendUint64(b, k.Seq)
			}
		case store.PartAt:
			b = binary.BigEndian.AppendUint64(b, uint64(k.At)^(1<<63))
		case store.PartName:
			b = append(b, k.Name...)
		case store.PartSub:
			b = append(b, k.Sub...)
		}
		if s.w == 0 && i < len(l.segs)-1 {
			b = append(b, s.sep)
		}
	}
	return b, nil
}

// keyOf is k's whole key, in a slice of its own (badger keeps the
// slices a write passes it) and of its size.
func keyOf(k store.Key) ([]byte, error) {
	l := layouts[k.Fam]
	n := len(l.pfx)
	for _, s := range l.segs {
		n += s.w + 1 // a name's separator, at most
		switch s.p {
		case store.PartName:
			n += len(k.Name)
		case store.PartSub:
			n += len(k.Sub)
		}
	}
	return appendKey(make([]byte, 0, n), k, len(l.segs))
}

// parsed is a key read back: its parts, names as the key's bytes.
type parsed struct {
	k         store.Key
	name, sub []byte
}

// parseKey reads a key back; false for a key of no family this build
// knows or one its family's layout does not fit.
func parseKey(key []byte) (parsed, bool) {
	var p parsed
	if store.IsMarker(string(key)) {
		p.k.Fam, p.name = store.FamMarker, key
		return p, true
	}
	i := bytes.IndexByte(key, '/')
	if i < 0 {
		return p, false
	}
	fam, ok := byPrefix[string(key[:i+1])]
	if !ok {
		return p, false
	}
	l := layouts[fam]
	ok = p.in(fam, &l, key[i+1:])
	return p, ok
}

// in reads back into p a key of fam (layout l) from what follows its
// prefix.
func (p *parsed) in(fam store.Family, l *layout, rest []byte) bool {
	*p = parsed{k: store.Key{Fam: fam}}
	// Fixed-width parts from the front, then from the back; what is left
	// is the names, each but the layout's last ended by its separator.
	f, e := 0, len(l.segs)
	for f < e && l.segs[f].w > 0 {
		s := &l.segs[f]
		if len(rest) < s.w {
			return false
		}
		p.fixed(s, rest[:s.w])
		rest, f = rest[s.w:], f+1
	}
	for e > f && l.segs[e-1].w > 0 {
		s := &l.segs[e-1]
		if len(rest) < s.w {
			return false
		}
		p.fixed(s, rest[len(rest)-s.w:])
		rest, e = rest[:len(rest)-s.w], e-1
	}
	if e < len(l.segs) && e > f {
		// The last name is followed by fixed parts: it ends with its
		// separator.
		if len(rest) == 0 || rest[len(rest)-1] != l.segs[e-1].sep {
			return false
		}
		rest = rest[:len(rest)-1]
	}
	switch e - f {
	case 0:
		return len(rest) == 0
	case 1:
		p.set(l.segs[f].p, rest)
		return true
	case 2:
		var j int
		if l.splitLast {
			j = bytes.LastIndexByte(rest, l.segs[f].sep)
		} else {
			j = bytes.IndexByte(rest, l.segs[f].sep)
		}
		if j < 0 {
			return false
		}
		p.set(l.segs[f].p, rest[:j])
		p.set(l.segs[f+1].p, rest[j+1:])
		return true
	}
	return false
}

func (p *parsed) fixed(s *seg, b []byte) {
	switch s.p {
	case store.PartID:
		copy(p.k.ID[:], b)
	case store.PartSeq:
		if s.w == 4 {
			p.k.Seq = uint64(binary.BigEndian.Uint32(b))
		} else {
			p.k.Seq = binary.BigEndian.Uint64(b)
		}
	case store.PartAt:
		p.k.At = int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
	}
}

func (p *parsed) set(part store.Part, b []byte) {
	if part == store.PartName {
		p.name = b
	} else {
		p.sub = b
	}
}

// key is p's Key, its names made strings.
func (p parsed) key() store.Key {
	k := p.k
	k.Name, k.Sub = string(p.name), string(p.sub)
	return k
}
