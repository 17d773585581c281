package kind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/vigilhq/vigil/api"
)

// The host's bounds on a watch's params, held by CheckParams before any
// kind sees them.
const (
	// MaxParamsBytes bounds a params document, in bytes. Params are kept
	// on the row and copied into the plugin on every probe, so their size
	// is paid per probe; the bundled kinds' largest params are a few KiB
	// (a ticket's sixteen 256-byte markers, an http expectation).
	MaxParamsBytes = 64 << 10
	// MaxParamsDepth bounds how deep a params document nests: objects and
	// arrays, the outermost counting as one. The bundled kinds' schemas
	// nest four deep, with room below an http json_path's equals value;
	// past a few dozen levels only a decoder's recursion is exercised, in
	// the plugin's memory and on its stack.
	MaxParamsDepth = 32
)

// CheckParams refuses params over the host's bounds: more than
// MaxParamsBytes, or nesting deeper than MaxParamsDepth. The refusal is
// an *api.Error with api.CodeInvalidParams, so a client's oversized or deep
// document is its own 422 and never a plugin's fault; Field is "params"
// for the size, and for the nesting the path down to the first value
// past the bound, its keys and indexes joined by "." as a schema's
// refusal names its field ("params.expect.json_path.equals.0"). Empty
// params pass (a kind reads them as null), and so does what is not JSON
// at all: the kind's schema refuses that, naming where it breaks.
func CheckParams(params json.RawMessage) error {
	if n := len(params); n > MaxParamsBytes {
		return &api.Error{Code: api.CodeInvalidParams, Field: "params",
			Message: fmt.Sprintf("%d bytes; params are at most %d", n, MaxParamsBytes)}
	}
	path, deep := tooDeep(params, MaxParamsDepth)
	if !deep {
		return nil
	}
	return &api.Error{Code: api.CodeInvalidParams, Field: strings.Join(append([]string{"params"}, path...), "."),
		Message: fmt.Sprintf("nested more than %d objects and arrays deep", MaxParamsDepth)}
}

// frame is one open object or array while tooDeep reads a document: the
// key or index of the value now being read in it.
type frame struct {
	object bool
	key    string // the member being read, in an object
	index  int    // the element being read, in an array
	// wantKey: in an object, the next string is a member name.
	wantKey bool
}

// tooDeep reports whether doc nests objects and arrays more than max
// deep, and the path of keys and indexes to the first one that does. A
// document that is not JSON is not too deep: reading stops at the error.
func tooDeep(doc []byte, max int) (path []string, deep bool) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber() // 1e999 is JSON; it must not stop the reading
	var stack []frame
	// value marks one value read in the innermost container: the next
	// token of an object is a key again, of an array the next index.
	value := func() {
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		if f.object {
			f.wantKey = true
		} else {
			f.index++
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil { // io.EOF at the end, or not JSON
			return nil, false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) == max {
					return pathOf(stack), true
				}
				stack = append(stack, frame{object: t == '{', wantKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				value()
			}
		case string:
			if f := len(stack) - 1; f >= 0 && stack[f].wantKey {
				stack[f].key, stack[f].wantKey = t, false
				continue
			}
			value()
		default:
			value()
		}
	}
}

// pathOf is where the reading stands in each open container.
func pathOf(stack []frame) []string {
	out := make([]string, 0, len(stack))
	for _, f := range stack {
		if f.object {
			out = append(out, f.key)
		} else {
			out = append(out, strconv.Itoa(f.index))
		}
	}
	return out
}
