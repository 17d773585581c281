package probeshare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// The wire format, JSON both ways:
//
//	request  {"ids":["<id>", …]}                      at most MaxIDs ids, MaxRequestBytes bytes
//	reply    {"seen":[{"id","attempts","last_probe"?}, …]}  the ids the node holds
//	         {"error":{"code","message"}}             a request it refused

// MaxIDs is how many watches one request may name: a page of a listing.
const MaxIDs = 256

// MaxRequestBytes bounds a request; MaxReplyBytes a reply (a full one is
// about a third of it).
const (
	MaxRequestBytes = 16 << 10
	MaxReplyBytes   = 64 << 10
)

// The error codes a node answers a request it refuses with.
const (
	CodeMalformed  = "malformed_request"
	CodeTooLarge   = "request_too_large"
	CodeTooManyIDs = "too_many_ids"
	CodeBadID      = "bad_watch_id"
)

// ErrBadRequest is what every *RequestError answers errors.Is to.
var ErrBadRequest = errors.New("probeshare: bad request")

// RequestError is a request refused, by its code: what the responder
// answers, and what the asker reads back from the answer.
type RequestError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *RequestError) Error() string { return "probeshare: " + e.Code + ": " + e.Message }

// Unwrap makes errors.Is(err, ErrBadRequest) true.
func (e *RequestError) Unwrap() error { return ErrBadRequest }

type request struct {
	IDs []string `json:"ids"`
}

type seenEntry struct {
	ID        string     `json:"id"`
	Attempts  int        `json:"attempts"`
	LastProbe *time.Time `json:"last_probe,omitempty"`
}

type reply struct {
	Seen  []seenEntry   `json:"seen"`
	Error *RequestError `json:"error,omitempty"`
}

func encodeRequest(ids []store.ID) []byte {
	r := request{IDs: make([]string, len(ids))}
	for i, id := range ids {
		r.IDs[i] = id.String()
	}
	b, _ := json.Marshal(r) // strings only: cannot fail
	return b
}

// parseRequest reads a request from another node: strict, bounded.
func parseRequest(b []byte) ([]store.ID, error) {
	if len(b) > MaxRequestBytes {
		return nil, &RequestError{Code: CodeTooLarge, Message: fmt.Sprintf("a request of %d bytes; at most %d", len(b), MaxRequestBytes)}
	}
	var r request
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, &RequestError{Code: CodeMalformed, Message: err.Error()}
	}
	if dec.More() {
		return nil, &RequestError{Code: CodeMalformed, Message: "data after the request"}
	}
	if len(r.IDs) > MaxIDs {
		return nil, &RequestError{Code: CodeTooManyIDs, Message: fmt.Sprintf("%d ids; at most %d", len(r.IDs), MaxIDs)}
	}
	ids := make([]store.ID, len(r.IDs))
	for i, s := range r.IDs {
		id, err := store.ParseID(s)
		if err != nil {
			return nil, &RequestError{Code: CodeBadID, Message: fmt.Sprintf("ids[%d]: %q is not a watch id", i, s)}
		}
		ids[i] = id
	}
	return ids, nil
}

func encodeReply(seen map[store.ID]scheduler.Seen) []byte {
	r := reply{Seen: make([]seenEntry, 0, len(seen))}
	for id, v := range seen {
		e := seenEntry{ID: id.String(), Attempts: v.Attempts}
		if !v.LastProbe.IsZero() {
			t := v.LastProbe.UTC()
			e.LastProbe = &t
		}
		r.Seen = append(r.Seen, e)
	}
	b, _ := json.Marshal(r) // strings, ints and times: cannot fail
	return b
}

func encodeError(err error) []byte {
	var re *RequestError
	if !errors.As(err, &re) {
		re = &RequestError{Code: CodeMalformed, Message: err.Error()}
	}
	b, _ := json.Marshal(reply{Error: re})
	return b
}

// parseReply reads another node's answer: the Seen of each watch it
// holds, or the *RequestError it refused the request with.
func parseReply(b []byte) (map[store.ID]scheduler.Seen, error) {
	if len(b) > MaxReplyBytes {
		return nil, fmt.Errorf("probeshare: a reply of %d bytes; at most %d", len(b), MaxReplyBytes)
	}
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("probeshare: a malformed reply: %w", err)
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if len(r.Seen) > MaxIDs {
		return nil, fmt.Errorf("probeshare: a reply of %d watches; at most %d", len(r.Seen), MaxIDs)
	}
	out := make(map[store.ID]scheduler.Seen, len(r.Seen))
	for _, e := range r.Seen {
		id, err := store.ParseID(e.ID)
		if err != nil {
			return nil, fmt.Errorf("probeshare: a reply names %q, not a watch id", e.ID)
		}
		if e.Attempts < 0 {
			return nil, fmt.Errorf("probeshare: a reply gives watch %s %d attempts", e.ID, e.Attempts)
		}
		v := scheduler.Seen{Attempts: e.Attempts}
		if e.LastProbe != nil {
			v.LastProbe = e.LastProbe.UTC()
		}
		out[id] = v
	}
	return out, nil
}
