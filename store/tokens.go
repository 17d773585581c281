package store

import (
	"context"
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

// TokenRecord is what a capability token's hash names.
type TokenRecord struct {
	// Watch is the watch the token acts on.
	Watch ID `json:"watch"`
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
