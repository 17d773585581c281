package storecopy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/vigilhq/vigil/store"
)

// Source is a store whose records can be read out.
type Source interface {
	ExportRecords(ctx context.Context, fn func(store.KeyValue) error) error
}

// Destination is a store records are written into (and read back, to
// verify).
type Destination interface {
	Source
	ImportRecords(ctx context.Context, recs []store.KeyValue) error
}

// DefaultBatch is how many records one import holds.
const DefaultBatch = 500

// Options configure Copy.
type Options struct {
	// Batch bounds the records of one import (DefaultBatch when zero).
	Batch int
	// Resume copies into a destination that already holds records (a
	// copy that stopped half-way): they are overwritten by key, and the
	// verification still refuses anything the source does not hold.
	Resume bool
	// Progress receives a line per batch (nil: none).
	Progress io.Writer
}

// Counts are records per family.
type Counts map[store.Family]int

// Total is the sum of c.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String lists c's non-zero families in store.Families order.
func (c Counts) String() string {
	var b strings.Builder
	for _, f := range store.Families {
		if c[f] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", f, c[f])
	}
	if b.Len() == 0 {
		return "nothing"
	}
	return b.String()
}

// Summary is what a copy did.
type Summary struct {
	// Copied counts the records copied, per family; the destination holds
	// the same, verified.
	Copied Counts
}

// ErrNotEmpty: the destination holds records and Resume was not asked.
var ErrNotEmpty = errors.New("storecopy: the destination is not empty")

// NotEmptyError names what a destination holds.
type NotEmptyError struct{ Holds Counts }

func (e *NotEmptyError) Error() string {
	return fmt.Sprintf("%v: it holds %s", ErrNotEmpty, e.Holds)
}
func (e *NotEmptyError) Unwrap() error { return ErrNotEmpty }

// ErrSourceEmpty: the source holds no record: a wrong directory or
// bucket, most likely (opening a JetStream bucket creates it).
var ErrSourceEmpty = errors.New("storecopy: the source holds no records (the wrong directory or bucket?)")

// ErrVerify: after the copy, the destination's records differ from the
// source's.
var ErrVerify = errors.New("storecopy: the copy does not match its source")

// VerifyError names the families that differ.
type VerifyError struct {
	Families []string // "rows: source 10, destination 9", …
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%v: %s", ErrVerify, strings.Join(e.Families, "; "))
}
func (e *VerifyError) Unwrap() error { return ErrVerify }

// tally is per-family counts and digests.
type tally struct {
	counts Counts
	sums   map[store.Family]uint64
}

func newTally() tally { return tally{counts: Counts{}, sums: map[store.Family]uint64{}} }

func (t tally) add(r store.KeyValue) {
	t.counts[r.Key.Fam]++
	t.sums[r.Key.Fam] += digest(r)
}

// digest is r's SHA-256 (its key's parts, length-prefixed, and its
// value), first 8 bytes: summed per family it is independent of the
// order a backend lists its keys in.
func digest(r store.KeyValue) uint64 {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	k := r.Key
	put([]byte(k.Fam))
	put(k.ID[:])
	put([]byte(k.Name))
	put([]byte(k.Sub))
	binary.BigEndian.PutUint64(n[:], k.Seq)
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(k.At))
	h.Write(n[:])
	put(r.Value)
	return binary.BigEndian.Uint64(h.Sum(nil))
}

func count(ctx context.Context, s Source) (tally, error) {
	t := newTally()
	err := s.ExportRecords(ctx, func(r store.KeyValue) error { t.add(r); return nil })
	return t, err
}

// Copy copies every record of src into dst and verifies the result.
func Copy(ctx context.Context, src Source, dst Destination, opt Options) (Summary, error) {
	batch := opt.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	progress := opt.Progress
	if progress == nil {
		progress = io.Discard
	}
	held, err := count(ctx, dst)
	if err != nil {
		return Summary{}, fmt.Errorf("storecopy: reading the destination: %w", err)
	}
	if held.counts.Total() > 0 && !opt.Resume {
		return Summary{}, &NotEmptyError{Holds: held.counts}
	}
	totals, err := count(ctx, src)
	if err != nil {
		return Summary{}, fmt.Errorf("storecopy: reading the source: %w", err)
	}
	all := totals.counts.Total()
	if all == 0 {
		return Summary{}, ErrSourceEmpty
	}
	copied := newTally()
	var buf []store.KeyValue
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		if err := dst.ImportRecords(ctx, buf); err != nil {
			return fmt.Errorf("storecopy: writing: %w", err)
		}
		for _, r := range buf {
			copied.add(r)
		}
		last := buf[len(buf)-1].Key.Fam
		fmt.Fprintf(progress, "copied %d/%d records (%s %d/%d)\n",
			copied.counts.Total(), all, last, copied.counts[last], totals.counts[last])
		buf = buf[:0]
		return nil
	}
	err = src.ExportRecords(ctx, func(r store.KeyValue) error {
		buf = append(buf, r)
		if len(buf) >= batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return Summary{}, fmt.Errorf("storecopy: copying: %w", err)
	}
	got, err := count(ctx, dst)
	if err != nil {
		return Summary{}, fmt.Errorf("storecopy: verifying: %w", err)
	}
	if err := compare(copied, got, "source", "destination"); err != nil {
		return Summary{}, err
	}
	// The source read again: a write it took while the copy read it
	// (a host serving it) changed a record the copy had passed.
	again, err := count(ctx, src)
	if err != nil {
		return Summary{}, fmt.Errorf("storecopy: reading the source again: %w", err)
	}
	if err := compare(copied, again, "copied", "now"); err != nil {
		var ve *VerifyError
		if errors.As(err, &ve) {
			return Summary{}, &SourceChangedError{Families: ve.Families}
		}
		return Summary{}, err
	}
	return Summary{Copied: copied.counts}, nil
}

// ErrSourceChanged: the source was written while it was copied (a host
// was serving it); the copy is not a snapshot of any instant.
var ErrSourceChanged = errors.New("storecopy: the source changed during the copy (is a host serving it?)")

// SourceChangedError names the families that changed.
type SourceChangedError struct {
	Families []string // "rows: copied 10, now 11", …
}

func (e *SourceChangedError) Error() string {
	return fmt.Sprintf("%v: %s", ErrSourceChanged, strings.Join(e.Families, "; "))
}
func (e *SourceChangedError) Unwrap() error { return ErrSourceChanged }

// compare is nil when want and got hold the same records.
func compare(want, got tally, wantName, gotName string) error {
	fams := map[store.Family]bool{}
	for f := range want.counts {
		fams[f] = true
	}
	for f := range got.counts {
		fams[f] = true
	}
	var diff []string
	for f := range fams {
		switch {
		case want.counts[f] != got.counts[f]:
			diff = append(diff, fmt.Sprintf("%s: %s %d, %s %d", f, wantName, want.counts[f], gotName, got.counts[f]))
		case want.sums[f] != got.sums[f]:
			diff = append(diff, fmt.Sprintf("%s: %d records each, not the same ones", f, want.counts[f]))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	sort.Strings(diff)
	return &VerifyError{Families: diff}
}
