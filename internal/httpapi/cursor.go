package httpapi

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// A watch listing's cursor is opaque to clients, and sealed: base64url
// (unpadded) of a version byte, the 16 bytes of the id the next page
// starts after encrypted with this server's key (one AES block), and 8
// bytes of an HMAC-SHA-256 over both. Sealed because the id a page ends on
// may be a row the principal may not see (the walk examines rows it
// skips): a plain id would leak that row's existence and creation time. A
// cursor is valid for the server process that wrote it; the key is drawn
// at start. The version lets a later build change what a cursor holds and
// still refuse, rather than misread, one it did not write.
//
// Rejected: zeroing the id's random part (still its time, and a page of
// rows sharing one millisecond could never advance), and ending a page
// only on a visible row (a page over hidden rows could never end).
const cursorVersion = 2

const cursorTagLen = 8

// cursorCodec seals and opens cursors with one server's keys.
type cursorCodec struct {
	block cipher.Block
	mac   []byte
}

// newCursorCodec draws the keys.
func newCursorCodec() cursorCodec {
	key := make([]byte, 16+32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24)
	block, _ := aes.NewCipher(key[:16])
	return cursorCodec{block: block, mac: key[16:]}
}

func (k cursorCodec) tag(b []byte) []byte {
	h := hmac.New(sha256.New, k.mac)
	h.Write(b)
	return h.Sum(nil)[:cursorTagLen]
}

// encode is the cursor of the position after id.
func (k cursorCodec) encode(id store.ID) string {
	b := make([]byte, 1+len(id), 1+len(id)+cursorTagLen)
	b[0] = cursorVersion
	k.block.Encrypt(b[1:], id[:])
	b = append(b, k.tag(b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decode reads a cursor encode wrote; anything else is a 422
// invalid_field naming after. The empty cursor is the start.
func (k cursorCodec) decode(s string) (store.ID, error) {
	var id store.ID
	if s == "" {
		return id, nil
	}
	bad := &api.Error{Code: api.CodeInvalidField, Field: "after", Message: "not a cursor this server gave (or one from before it restarted): pass the next of a listing as it came, or list from the start"}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != 1+len(id)+cursorTagLen || b[0] != cursorVersion {
		return id, bad
	}
	body := b[:1+len(id)]
	if !hmac.Equal(k.tag(body), b[1+len(id):]) {
		return id, bad
	}
	k.block.Decrypt(id[:], body[1:])
	// One spelling per cursor: the decoder skips CR and LF, this does not.
	if id == (store.ID{}) || k.encode(id) != s {
		return id, bad
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
