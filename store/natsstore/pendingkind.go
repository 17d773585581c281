package natsstore

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/vigilhq/vigil/store"
)

// pendingKindKey is a pending row's entry in the pending-by-kind index,
// pk.<kind>.<id>, key only: written with the row's pending state-index
// entry and deleted with it, in the same batch, as badger's pk/ index.
// No store of this backend predates the index, so it has no backfill.
func pendingKindKey(kind string, id store.ID) string { return "pk." + tok(kind) + "." + id.String() }

// CountPendingByKind counts the pending rows by kind from the index's
// keys alone, no row decoded; a kind with none pending is absent.
func (s *Store) CountPendingByKind(ctx context.Context) (map[string]int, error) {
	keys, err := s.scan(ctx, "pk.>", true)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, k := range keys {
		parts := strings.SplitN(k.key, ".", 3)
		if len(parts) != 3 {
			continue
		}
		kind, ok := untok(parts[1])
		if !ok {
			continue
		}
		out[kind]++
	}
	return out, nil
}

// untok reads a tok back; false for a hashed one (over 120 bytes), which
// no kind name is.
func untok(t string) (string, bool) {
	if t == "=" {
		return "", true
	}
	if strings.HasPrefix(t, "=h") {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(t)
	return string(b), err == nil
}
