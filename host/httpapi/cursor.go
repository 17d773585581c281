package httpapi

import (
	"encoding/base64"
	"strconv"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// A watch listing's cursor is opaque to clients: base64url (unpadded) of a
// version byte and the 16 bytes of the id the next page starts after. The
// version lets a later build change what a cursor holds and still refuse,
// rather than misread, one it did not write.
const cursorVersion = 1

// encodeCursor is the cursor of the position after id.
func encodeCursor(id store.ID) string {
	b := make([]byte, 0, 1+len(id))
	b = append(b, cursorVersion)
	b = append(b, id[:]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor encodeCursor wrote; anything else is a 422
// invalid_field naming after. The empty cursor is the start.
func decodeCursor(s string) (store.ID, error) {
	var id store.ID
	if s == "" {
		return id, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 1+len(id) || b[0] != cursorVersion {
		return id, &api.Error{Code: api.CodeInvalidField, Field: "after", Message: "not a cursor this server gave: pass the next of a listing as it came"}
	}
	copy(id[:], b[1:])
	// One spelling per cursor: the decoder skips CR and LF, this does not.
	if id == (store.ID{}) || encodeCursor(id) != s {
		return id, &api.Error{Code: api.CodeInvalidField, Field: "after", Message: "not a cursor this server gave: pass the next of a listing as it came"}
	}
	return id, nil
}

// Listing limits: ?limit= is 1 to maxLimit, defaultLimit when absent.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// parseLimit reads a ?limit= value ("" is the default).
func parseLimit(v string) (int, error) {
	if v == "" {
		return defaultLimit, nil
	}
	limit, err := strconv.Atoi(v)
	if err != nil || limit < 1 || limit > maxLimit {
		return 0, &api.Error{Code: api.CodeInvalidField, Field: "limit", Message: "want 1 to " + strconv.Itoa(maxLimit)}
	}
	return limit, nil
}
