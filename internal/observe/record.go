package observe

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vigilhq/vigil/api"
)

// Input bounds, in bytes.
const (
	MaxItem     = 256
	MaxThread   = 256
	MaxRevision = 128
	MaxText     = 16 << 10
	MaxRun      = 128
)

// RunGrammar says what a run id may be.
const RunGrammar = "1 to 128 bytes of letters, digits and . _ - : / @ +"

// Record is what an executor reports: an item it saw in an outside source.
// The reporter is never a field: it is the authenticated principal. Run
// names the run that saw the item (the reporter's own id for it, such as
// a scheduled job's occurrence); it is kept on the event for audit, is
// part of no identity and is the key of the per-run budget. A record that
// names no run is of its principal's one unnamed run.
type Record struct {
	Item     string `json:"item"`
	Thread   string `json:"thread"`
	Text     string `json:"text"`
	Revision string `json:"revision,omitempty"`
	Source   string `json:"source,omitempty"`
	Run      string `json:"run,omitempty"`
}

// ItemV1 is the payload of an observe.item.recorded event
// (observe.item.v1). Its fields are in a fixed order, so an exact repeat
// encodes to the same bytes.
type ItemV1 struct {
	Source   string `json:"source"`
	Item     string `json:"item"`
	Revision string `json:"revision"`
	Thread   string `json:"thread"`
	Text     string `json:"text"`
}

// Event names.
const (
	EventRecorded = "observe.item.recorded"
	PayloadItemV1 = "observe.item.v1"
	// Stream is the event log stream of recorded items.
	Stream = "observe"
	// SkippedStream records items routing skipped (their thread's owner
	// takes no input).
	SkippedStream = "observe.skipped"
)

// DecodeRecord reads a record strictly: one JSON object, only the known
// fields, each a string of valid UTF-8 (encoding/json would quietly turn
// invalid bytes and lone surrogate escapes into U+FFFD; here they are
// refused), then Validate. A run given as "" is refused (a run left out is
// left out, not empty: an unset variable in a script is a mistake to
// report). Every failure is an *api.Error naming the field (or the body).
func DecodeRecord(body []byte) (Record, error) {
	var r Record
	if len(bytes.TrimSpace(body)) == 0 {
		return r, &api.Error{Code: api.CodeMalformedJSON, Message: "the request needs a JSON body"}
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return r, &api.Error{Code: api.CodeMalformedJSON, Message: err.Error()}
	}
	if fields == nil {
		return r, &api.Error{Code: api.CodeMalformedJSON, Message: "the body must be a JSON object"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return r, &api.Error{Code: api.CodeMalformedJSON, Message: "trailing data after the JSON body"}
	}
	targets := map[string]*string{"item": &r.Item, "thread": &r.Thread, "text": &r.Text, "revision": &r.Revision, "source": &r.Source, "run": &r.Run}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		dst, ok := targets[name]
		if !ok {
			return r, &api.Error{Code: api.CodeInvalidField, Field: name, Message: "unknown field"}
		}
		raw := fields[name]
		if len(raw) == 0 || raw[0] != '"' {
			return r, &api.Error{Code: api.CodeInvalidField, Field: name, Message: "want a string"}
		}
		if !utf8.Valid(raw) || loneSurrogate(raw) {
			return r, &api.Error{Code: api.CodeInvalidField, Field: name, Message: "not valid UTF-8"}
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return r, &api.Error{Code: api.CodeInvalidField, Field: name, Message: "want a string"}
		}
		if name == "run" && r.Run == "" {
			return r, &api.Error{Code: api.CodeInvalidField, Field: "run", Message: "empty: want " + RunGrammar + ", or leave run out"}
		}
	}
	return r, r.Validate()
}

// loneSurrogate reports whether a JSON string literal holds a \uD800-\uDFFF
// escape that is not a high surrogate followed by a low one: text that
// has no UTF-8 form.
func loneSurrogate(raw []byte) bool {
	for i := 0; i+5 < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		v, ok := hex4(raw[i+2 : i+6])
		switch {
		case !ok || v < 0xD800 || v > 0xDFFF:
		case v >= 0xDC00:
			return true // a low surrogate first
		default:
			j := i + 6
			if j+5 >= len(raw) || raw[j] != '\\' || raw[j+1] != 'u' {
				return true
			}
			w, ok := hex4(raw[j+2 : j+6])
			if !ok || w < 0xDC00 || w > 0xDFFF {
				return true
			}
			i = j
		}
		i += 5
	}
	return false
}

func hex4(b []byte) (rune, bool) {
	var v rune
	for _, c := range b {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | rune(d)
	}
	return v, true
}

// Validate checks the bounds: item and thread 1-256 bytes, revision at
// most 128, text at most 16 KiB, all valid UTF-8, a source, when given, in
// the source grammar, and a run, when given, in the run grammar. The first
// failure is returned, naming its field. Nothing of the text is echoed.
func (r Record) Validate() error {
	for _, f := range []struct {
		name     string
		v        string
		min, max int
	}{
		{"item", r.Item, 1, MaxItem},
		{"thread", r.Thread, 1, MaxThread},
		{"revision", r.Revision, 0, MaxRevision},
		{"text", r.Text, 0, MaxText},
	} {
		switch {
		case len(f.v) < f.min:
			return &api.Error{Code: api.CodeInvalidField, Field: f.name, Message: "required: 1 to " + fmt.Sprint(f.max) + " bytes"}
		case len(f.v) > f.max:
			return &api.Error{Code: api.CodeInvalidField, Field: f.name, Message: fmt.Sprintf("%d bytes: at most %d", len(f.v), f.max)}
		case !utf8.ValidString(f.v):
			return &api.Error{Code: api.CodeInvalidField, Field: f.name, Message: "not valid UTF-8"}
		}
	}
	if r.Source != "" && !validName(r.Source) {
		return &api.Error{Code: api.CodeInvalidField, Field: "source", Message: fmt.Sprintf("want 1-%d of a-z 0-9 . _ -", MaxSourceName)}
	}
	if r.Run != "" && !validRun(r.Run) {
		return &api.Error{Code: api.CodeInvalidField, Field: "run", Message: fmt.Sprintf("%d bytes: want %s", len(r.Run), RunGrammar)}
	}
	return nil
}

// validRun is the run grammar: 1 to MaxRun bytes of ASCII letters, digits
// and . _ - : / @ +, enough for a job's occurrence ("nightly@2026-12-01T20:00:00+00:00")
// or a CI run ("actions/runs/123/attempts/2"), and nothing a log line or a
// terminal would read as structure.
func validRun(s string) bool {
	if len(s) == 0 || len(s) > MaxRun {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("._-:/@+", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Once is the item's de-duplication identity: a digest of scope, source,
// item and revision, never of the content, so an edit back to earlier text
// (A, B, A) is a new revision rather than a vanished one. Each part is
// length-prefixed, so no two tuples share an encoding.
func Once(scope, source, item, revision string) string {
	h := sha256.New()
	for _, s := range []string{scope, source, item, revision} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Title is a Work's title from its opener: the first line of the text,
// trimmed, at most 200 bytes on a rune boundary; "(untitled)" if empty.
func Title(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
	if len(line) > 200 {
		cut := 200
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut]
	}
	if line == "" {
		return "(untitled)"
	}
	return line
}
