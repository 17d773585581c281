package kind

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"pgregory.net/rapid"
)

// nest is v inside n arrays.
func nest(n int, v string) string { return strings.Repeat("[", n) + v + strings.Repeat("]", n) }

// CheckParams refuses, as the caller's invalid_params naming the field,
// params over the size or depth bound, and passes what is within both.
func TestCheckParams(t *testing.T) {
	zeros := strings.TrimSuffix(strings.Repeat("0.", MaxParamsDepth-3), ".")
	for _, tt := range []struct {
		name, params string
		field        string // "" passes
	}{
		{"empty", ``, ""},
		{"null", `null`, ""},
		{"a scalar", `"x"`, ""},
		{"at the depth", `{"a":` + nest(MaxParamsDepth-1, "1") + `}`, ""},
		{"one past the depth", `{"a":` + nest(MaxParamsDepth, "1") + `}`, "params.a." + strings.TrimSuffix(strings.Repeat("0.", MaxParamsDepth-1), ".")},
		{"an http expectation 500 deep", `{"url":"https://example.com/","expect":{"json_path":{"path":"a","equals":` + nest(500, "1") + `}}}`,
			"params.expect.json_path.equals." + zeros},
		{"the first deep value, not the deepest", `{"a":[1,{"b":2}],"c":[[` + nest(MaxParamsDepth, "{}") + `]]}`, "params.c.0.0." + strings.TrimSuffix(strings.Repeat("0.", MaxParamsDepth-3), ".")},
		{"keys as written", `{"x.y":{"":{"é":` + nest(MaxParamsDepth, "") + `}}}`, "params.x.y..é." + strings.TrimSuffix(strings.Repeat("0.", MaxParamsDepth-3), ".")},
		{"index past siblings", `[1,"s",{},[],null,` + nest(MaxParamsDepth, "") + `]`, "params.5." + strings.TrimSuffix(strings.Repeat("0.", MaxParamsDepth-1), ".")},
		{"at the size", `"` + strings.Repeat("x", MaxParamsBytes-2) + `"`, ""},
		{"over the size", `"` + strings.Repeat("x", MaxParamsBytes-1) + `"`, "params"},
		{"a number no float holds", `{"n":1e999}`, ""},
		{"not JSON: the kind's to refuse", `{"a":` + nest(10, ""), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckParams(json.RawMessage(tt.params))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ref *api.Error
			if !errors.As(err, &ref) || ref.Code != api.CodeInvalidParams || ref.Field != tt.field || ref.Message == "" {
				t.Fatalf("err = %v, want invalid_params naming %s", err, tt.field)
			}
		})
	}
}

// node is a JSON value whose members keep their order: an object (keys
// set), an array, or a scalar.
type node struct {
	object   bool
	scalar   string // a scalar's JSON; "" for a container
	keys     []string
	children []node
}

func (n node) json(b *bytes.Buffer) {
	if n.scalar != "" {
		b.WriteString(n.scalar)
		return
	}
	open, close := byte('['), byte(']')
	if n.object {
		open, close = '{', '}'
	}
	b.WriteByte(open)
	for i, c := range n.children {
		if i > 0 {
			b.WriteByte(',')
		}
		if n.object {
			k, _ := json.Marshal(n.keys[i])
			b.Write(k)
			b.WriteByte(':')
		}
		c.json(b)
	}
	b.WriteByte(close)
}

// firstDeep is the path, in document order, to the first container at
// depth max+1, the root at depth 1; ok is false when none is.
func (n node) firstDeep(depth, max int) (path []string, ok bool) {
	if n.scalar != "" {
		return nil, false
	}
	if depth > max {
		return []string{}, true
	}
	for i, c := range n.children {
		if p, ok := c.firstDeep(depth+1, max); ok {
			seg := strconv.Itoa(i)
			if n.object {
				seg = n.keys[i]
			}
			return append([]string{seg}, p...), true
		}
	}
	return nil, false
}

// genNode draws a value whose depth is at most depth; one child of each
// container (the spine) goes on to it, so the deep values are common.
func genNode(t *rapid.T, depth int, label string) node {
	if depth == 0 || rapid.IntRange(0, 9).Draw(t, label+"scalar") == 0 {
		return node{scalar: rapid.SampledFrom([]string{`1`, `"s"`, `null`, `true`, `1e999`, `"[{"`}).Draw(t, label+"v")}
	}
	n := node{object: rapid.Bool().Draw(t, label+"obj")}
	count := rapid.IntRange(1, 3).Draw(t, label+"n")
	spine := rapid.IntRange(0, count-1).Draw(t, label+"spine")
	for i := range count {
		d := min(depth-1, rapid.IntRange(0, 2).Draw(t, label+"side"))
		if i == spine {
			d = depth - 1
		}
		n.children = append(n.children, genNode(t, d, label+strconv.Itoa(i)+"."))
		if n.object {
			n.keys = append(n.keys, rapid.SampledFrom([]string{"a", "a", "json_path", "x.y", "", "é", `"`}).Draw(t, label+"k"))
		}
	}
	return n
}

// Property: whatever the shape, CheckParams refuses exactly the
// documents with a container past the depth, and names the first one in
// document order.
func TestCheckParamsDepthProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := genNode(t, rapid.IntRange(0, MaxParamsDepth+6).Draw(t, "depth"), "")
		var b bytes.Buffer
		root.json(&b)
		want, deep := root.firstDeep(1, MaxParamsDepth)
		err := CheckParams(b.Bytes())
		if !deep {
			if err != nil {
				t.Fatalf("%s: refused: %v", b.Bytes(), err)
			}
			return
		}
		var ref *api.Error
		if !errors.As(err, &ref) || ref.Field != strings.Join(append([]string{"params"}, want...), ".") {
			t.Fatalf("%s: %v, want the field params.%s", b.Bytes(), err, strings.Join(want, "."))
		}
	})
}

// depthOf is the reference depth of a decoded JSON value.
func depthOf(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			d = max(d, depthOf(c))
		}
		return d + 1
	case []any:
		for _, c := range x {
			d = max(d, depthOf(c))
		}
		return d + 1
	}
	return 0
}

// FuzzCheckParams: CheckParams never panics; JSON within the size is
// refused exactly when it nests past the depth, naming a path of the
// depth's length; a refusal is always invalid_params naming params.
func FuzzCheckParams(f *testing.F) {
	for _, s := range []string{`{}`, `null`, nest(MaxParamsDepth, "1"), nest(MaxParamsDepth+1, "1"), `{"a":[{"b":` + nest(40, "") + `}]}`,
		`{"a":1e999}`, `[[[`, `{"a":}`, `"\ud800"`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		err := CheckParams(doc)
		var ref *api.Error
		if err != nil && (!errors.As(err, &ref) || ref.Code != api.CodeInvalidParams || !strings.HasPrefix(ref.Field, "params")) {
			t.Fatalf("%q: %v", doc, err)
		}
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		var v any
		if len(doc) > MaxParamsBytes || dec.Decode(&v) != nil || dec.More() {
			return
		}
		switch deep := depthOf(v) > MaxParamsDepth; {
		case deep && err == nil:
			t.Fatalf("%q nests %d deep and passed", doc, depthOf(v))
		case !deep && err != nil:
			t.Fatalf("%q nests %d deep and was refused: %v", doc, depthOf(v), err)
		case deep && ref.Field != "params" && strings.Count(ref.Field, ".") < MaxParamsDepth:
			// A key holding "." makes the count larger, never smaller.
			t.Fatalf("%q: field %s names fewer than %d levels", doc, ref.Field, MaxParamsDepth)
		}
	})
}
