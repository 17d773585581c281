package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// A capability token (internal/captoken) acts on one record without a
// bearer token: a signal's URL settles its watch. The store keeps only
// the token's hash, under FamToken, naming the record it acts on; the
// record keeps the hash too (Watch.Token), so the two are written in one
// transaction (createRow) and deleted in one (deleteRow, when retention
// prunes the row): a token never outlives its record, and a record never
// lacks the token it was answered with.

// TokenRecord is what a capability token's hash names: a watch (a
// signal's), or a recipient's heartbeat.
type TokenRecord struct {
	// Watch is the watch the token acts on.
	Watch ID `json:"watch,omitzero"`
	// Recipient and Heartbeat name the heartbeat a ping URL's token
	// pings.
	Recipient string `json:"recipient,omitempty"`
	Heartbeat string `json:"heartbeat,omitempty"`
}

type storedToken struct {
	V int `json:"v"`
	TokenRecord
}

const tokenVersion = 1

func kToken(hash string) Key { return Key{Fam: FamToken, Name: hash} }

// putToken writes w's token record, when w has one: ErrExists when the
// hash is taken already (two tokens alike: the caller makes another).
func (t tx) putToken(w Watch) error {
	if w.Token == "" {
		return nil
	}
	if _, ok, err := t.Get(kToken(w.Token)); err != nil {
		return err
	} else if ok {
		return fmt.Errorf("store: capability token: %w", ErrExists)
	}
	b, err := json.Marshal(storedToken{V: tokenVersion, TokenRecord: TokenRecord{Watch: w.ID}})
	if err != nil {
		return err
	}
	t.Put(kToken(w.Token), b)
	return nil
}

// moveHeartbeatTokens writes the token records of a recipient's
// heartbeats as put (hash to recipient and name), and deletes those of
// old that put no longer has: in the record's own transaction, so a ping
// URL acts exactly while its heartbeat is declared. A hash another
// record holds is ErrExists.
func (t tx) moveHeartbeatTokens(rid string, old, put []Heartbeat) error {
	keep := map[string]bool{}
	for _, h := range put {
		hash := HashToken(h.Token)
		keep[hash] = true
		rec := TokenRecord{Recipient: rid, Heartbeat: h.Name}
		v, ok, err := t.Get(kToken(hash))
		if err != nil {
			return err
		}
		if ok {
			var st storedToken
			if json.Unmarshal(v, &st) == nil && st.TokenRecord == rec {
				continue
			}
			if st.Recipient != rid {
				return fmt.Errorf("store: heartbeat token: %w", ErrExists)
			}
		}
		b, err := json.Marshal(storedToken{V: tokenVersion, TokenRecord: rec})
		if err != nil {
			return err
		}
		t.Put(kToken(hash), b)
	}
	for _, h := range old {
		if hash := HashToken(h.Token); !keep[hash] {
			t.Delete(kToken(hash))
		}
	}
	return nil
}

// HashToken is what the store keeps of a capability token: its SHA-256,
// in hex (internal/captoken.Hash, the same).
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// GetToken reads the record a capability token's hash names: ErrNotFound
// when no record has it (never had, or its record was pruned), or when
// this build cannot read it.
func (s *Store) GetToken(ctx context.Context, hash string) (TokenRecord, error) {
	var out TokenRecord
	err := s.view(ctx, func(t tx) error {
		v, ok, err := t.Get(kToken(hash))
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		var st storedToken
		if err := json.Unmarshal(v, &st); err != nil || st.V != tokenVersion {
			return fmt.Errorf("%w (token record held aside)", ErrNotFound)
		}
		out = st.TokenRecord
		return nil
	})
	return out, err
}
