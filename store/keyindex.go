package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// KeyDigest is a partition key as FamPendingKey holds it: the hex of
// the first 16 bytes of its SHA-256. A key is up to 1,024 bytes of
// anything; its digest fits every adapter's key, and two keys sharing
// one would cost an extra look, never a wrong conclusion.
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

func kPendingKey(kind, key string, id ID) Key {
	return Key{Fam: FamPendingKey, Name: kind, Sub: KeyDigest(key), ID: id}
}

// PendingByKey returns the pending watches of kind whose partition key is
// one of keys, each once, in no promised order.
func (s *Store) PendingByKey(ctx context.Context, kind string, keys []string) ([]ID, error) {
	var out []ID
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		seen := make(map[ID]bool)
		for _, key := range keys {
			r := Range{Prefix: kPendingKey(kind, key, ID{}), Fixed: 2, KeysOnly: true}
			if err := t.Scan(r, func(k Key, _ []byte) (bool, error) {
				if err := ctx.Err(); err != nil {
					return false, err
				}
				if !seen[k.ID] {
					seen[k.ID] = true
					out = append(out, k.ID)
				}
				return true, nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
