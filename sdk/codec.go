package sdk

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/sdk/abi"
)

// The observe envelope is decoded and encoded by hand, in one pass each,
// instead of through encoding/json.
//
// Why: the host interrupts a plugin that runs past its timeout, and to be
// interruptible wazero checks the module's state at every loop entry and
// back-edge of the guest, which Go's wasm code generation makes one check
// per loop iteration and per function call. encoding/json scans its input
// several times, through a function-pointer state machine, and measured at
// ~3,500 checks (about 100 µs) to decode one observe request. This decoder
// makes roughly one check per byte. Params and outcome details, whose types
// belong to the author, still go through encoding/json.

var errSyntax = errors.New("malformed observe request")

// decodeObserveRequest parses the host's observe input: an object with
// each abi.ObserveRequest key at most once. A key this SDK does not know is
// skipped, so a newer host can add a field without breaking every plugin
// built before it.
func decodeObserveRequest(b []byte) (abi.ObserveRequest, error) {
	var req abi.ObserveRequest
	err := DecodeFields(b, func(key string, v Value) error {
		var err error
		switch key {
		case "kind":
			req.Kind, err = v.String()
		case "watch_id":
			req.WatchID, err = v.String()
		case "params":
			req.Params = v.Raw()
		case "now":
			req.Now, err = v.Time()
		case "attempt":
			var n int64
			n, err = v.Int()
			req.Attempt = int(n)
		case "baseline":
			if !v.IsNull() {
				req.Baseline = v.Raw()
			}
		}
		return err
	})
	if err != nil {
		return req, fmt.Errorf("%w: %w", errSyntax, err)
	}
	return req, nil
}

type decoder struct {
	b []byte
	i int
}

func (d *decoder) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errSyntax, what, d.i)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a JSON string. A string without escapes is one scan and one
// copy; escapes take the slow path.
func (d *decoder) str() (string, bool) {
	if !d.eat('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			if !utf8.ValidString(s) {
				return "", false
			}
			return s, true
		case c == '\\':
			return d.strSlow(start)
		case c < 0x20:
			return "", false
		}
		d.i++
	}
	return "", false
}

func (d *decoder) strSlow(start int) (string, bool) {
	out := append([]byte(nil), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		d.i++ // the backslash
		if d.i >= len(d.b) {
			return "", false
		}
		e := d.b[d.i]
		d.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", false
			}
			if utf16IsSurrogate(r) {
				// A high surrogate must be followed by \u and a low one.
				if r < 0xdc00 && d.i+1 < len(d.b) && d.b[d.i] == '\\' && d.b[d.i+1] == 'u' {
					d.i += 2
					lo, ok := d.hex4()
					if !ok {
						return "", false
					}
					if lo >= 0xdc00 && lo < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					} else {
						out = utf8.AppendRune(out, utf8.RuneError)
						r = lo
						if utf16IsSurrogate(r) {
							r = utf8.RuneError
						}
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}

func utf16IsSurrogate(r rune) bool { return r >= 0xd800 && r < 0xe000 }

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	var r rune
	for _, c := range d.b[d.i : d.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	d.i += 4
	return r, true
}

// maxDepth bounds nesting in a raw value, so a hostile document cannot
// exhaust the guest's stack.
const maxDepth = 128

// raw reads one JSON value of any type, validating it fully, and returns
// its bytes.
func (d *decoder) raw() ([]byte, bool) {
	start := d.i
	if !d.value(0) {
		return nil, false
	}
	return d.b[start:d.i], true
}

func (d *decoder) value(depth int) bool {
	if depth > maxDepth || d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		d.ws()
		if d.eat('}') {
			return true
		}
		for {
			d.ws()
			if _, ok := d.str(); !ok {
				return false
			}
			d.ws()
			if !d.eat(':') {
				return false
			}
			d.ws()
			if !d.value(depth + 1) {
				return false
			}
			d.ws()
			if d.eat('}') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		d.ws()
		if d.eat(']') {
			return true
		}
		for {
			d.ws()
			if !d.value(depth + 1) {
				return false
			}
			d.ws()
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '"':
		_, ok := d.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return d.word("true")
	case c == 'f':
		return d.word("false")
	case c == 'n':
		return d.word("null")
	}
	return false
}

func (d *decoder) word(w string) bool {
	if d.i+len(w) > len(d.b) || string(d.b[d.i:d.i+len(w)]) != w {
		return false
	}
	d.i += len(w)
	return true
}

// number reads a JSON number per RFC 8259.
func (d *decoder) number() bool {
	d.eat('-')
	switch {
	case d.eat('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return false
	}
	if d.eat('.') {
		if d.digits() == 0 {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if !d.eat('+') {
			d.eat('-')
		}
		if d.digits() == 0 {
			return false
		}
	}
	return true
}

func (d *decoder) digits() int {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - start
}

// appendObserveResponse encodes r as the observe output.
func appendObserveResponse(b []byte, r abi.ObserveResponse) []byte {
	b = append(b, `{"status":`...)
	b = appendString(b, r.Status)
	if r.Note != "" {
		b = append(b, `,"note":`...)
		b = appendString(b, r.Note)
	}
	if r.NextCheck != nil {
		b = append(b, `,"next_check":"`...)
		b = r.NextCheck.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if r.Outcome != nil {
		b = append(b, `,"outcome":{"result":`...)
		b = appendString(b, r.Outcome.Result)
		if r.Outcome.Summary != "" {
			b = append(b, `,"summary":`...)
			b = appendString(b, r.Outcome.Summary)
		}
		if len(r.Outcome.Detail) > 0 {
			b = append(b, `,"detail":`...)
			b = append(b, r.Outcome.Detail...)
		}
		b = append(b, '}')
	}
	if len(r.Baseline) > 0 {
		b = append(b, `,"baseline":`...)
		b = append(b, r.Baseline...)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Runs of plain bytes are copied
// whole; invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// decodeAdmitRequest parses the host's admit input in one pass: kind,
// params (raw), grants. Unknown keys are skipped, as in observe.
func decodeAdmitRequest(b []byte) (abi.AdmitRequest, error) {
	var req abi.AdmitRequest
	err := DecodeFields(b, func(key string, v Value) error {
		var err error
		switch key {
		case "kind":
			req.Kind, err = v.String()
		case "params":
			req.Params = v.Raw()
		case "grants":
			err = DecodeFields(v.Raw(), func(key string, v Value) error {
				var err error
				switch key {
				case "capabilities":
					req.Grants.Capabilities, err = v.Strings()
				case "fetch_hosts":
					req.Grants.FetchHosts, err = v.Strings()
				case "secrets":
					req.Grants.Secrets, err = v.Strings()
				case "programs":
					req.Grants.Programs, err = v.Strings()
				case "exec_max_timeout":
					req.Grants.ExecMaxTimeout, err = v.String()
				}
				return err
			})
		}
		return err
	})
	if err != nil {
		return req, fmt.Errorf("%w: %w", errSyntax, err)
	}
	return req, nil
}

// appendAdmitResponse encodes r as the admit output.
func appendAdmitResponse(b []byte, r abi.AdmitResponse) []byte {
	if r.OK {
		b = append(b, `{"ok":true`...)
	} else {
		b = append(b, `{"ok":false`...)
	}
	for _, f := range [...]struct{ name, v string }{
		{"code", r.Code}, {"message", r.Message}, {"field", r.Field}, {"setting", r.Setting},
		{"partition_key", r.PartitionKey},
	} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.name...)
			b = append(b, '"', ':')
			b = appendString(b, f.v)
		}
	}
	if r.Deadline != nil {
		b = append(b, `,"deadline":"`...)
		b = r.Deadline.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if r.NextCheck != nil {
		b = append(b, `,"next_check":"`...)
		b = r.NextCheck.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if len(r.Destinations) > 0 {
		b = append(b, `,"destinations":[`...)
		for i, d := range r.Destinations {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"target":`...)
			b = appendString(b, d.Target)
			if d.Field != "" {
				b = append(b, `,"field":`...)
				b = appendString(b, d.Field)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// decodeWakeRequest parses the host's wake input in one pass: event,
// source, body (raw, nil when null). Unknown keys are skipped, as in
// observe. The body is validated as it is skipped over, to the decoder's
// nesting bound, so a body too deep for it is an input that does not
// decode.
func decodeWakeRequest(b []byte) (abi.WakeRequest, error) {
	var req abi.WakeRequest
	err := DecodeFields(b, func(key string, v Value) error {
		var err error
		switch key {
		case "event":
			req.Event, err = v.String()
		case "source":
			req.Source, err = v.String()
		case "body":
			if !v.IsNull() {
				req.Body = v.Raw()
			}
		}
		return err
	})
	if err != nil {
		return req, fmt.Errorf("%w: %w", errSyntax, err)
	}
	return req, nil
}

// appendWakeResponse encodes keys as the wake output; nil is [].
func appendWakeResponse(b []byte, keys []string) []byte {
	b = append(b, `{"keys":[`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
	}
	return append(b, ']', '}')
}
