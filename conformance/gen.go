package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// gen draws params from a plugin's params schema. It knows the keywords
// most params schemas use (type, enum, const, properties, required,
// additionalProperties, items, minItems/maxItems, minimum/maximum and
// their exclusive forms, minLength/maxLength, format, anyOf/oneOf/allOf
// and local $ref) and ignores the rest: a pattern, for one, is not
// inverted, so a string it draws may break it and be refused. That is
// fine here: robustness wants odd params, and the values a patterned
// property needs come from the author's example instead.
type gen struct {
	r    *rand.Rand
	root any
}

// newGen seeds a generator; the same seed draws the same params.
func newGen(schema json.RawMessage, seed uint64) *gen {
	var root any
	_ = json.Unmarshal(schema, &root)
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), root: root}
}

// maxDepth bounds how deep a drawn value nests.
const maxDepth = 6

// value draws one value for schema s.
func (g *gen) value(s any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > maxDepth {
		return g.anyValue(depth)
	}
	if ref, ok := m["$ref"].(string); ok {
		if target, ok := g.resolve(ref); ok && depth < maxDepth {
			return g.value(target, depth+1)
		}
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[g.r.IntN(len(e))]
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return g.value(alts[g.r.IntN(len(alts))], depth+1)
		}
	}
	switch g.typeOf(m) {
	case "object":
		return g.object(m, depth)
	case "array":
		return g.array(m, depth)
	case "string":
		return g.str(m)
	case "integer":
		return g.number(m, true)
	case "number":
		return g.number(m, false)
	case "boolean":
		return g.r.IntN(2) == 0
	case "null":
		return nil
	}
	return g.anyValue(depth)
}

// typeOf picks the type to draw: the schema's, one of its list, or one its
// keywords imply.
func (g *gen) typeOf(m map[string]any) string {
	switch t := m["type"].(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if s, ok := t[g.r.IntN(len(t))].(string); ok {
				return s
			}
		}
	}
	switch {
	case m["properties"] != nil || m["required"] != nil || m["additionalProperties"] != nil:
		return "object"
	case m["items"] != nil:
		return "array"
	case m["minLength"] != nil || m["maxLength"] != nil || m["format"] != nil || m["pattern"] != nil:
		return "string"
	case m["minimum"] != nil || m["maximum"] != nil:
		return "number"
	}
	return ""
}

func (g *gen) resolve(ref string) (any, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	cur := g.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func (g *gen) object(m map[string]any, depth int) map[string]any {
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	required := stringList(m["required"])
	for _, k := range sortedKeys(props) {
		if slices.Contains(required, k) || g.r.IntN(2) == 0 {
			out[k] = g.value(props[k], depth+1)
		}
	}
	for _, k := range required {
		if _, ok := out[k]; !ok {
			out[k] = g.anyValue(depth + 1)
		}
	}
	if extra, ok := m["additionalProperties"].(map[string]any); ok && g.r.IntN(3) == 0 {
		out[g.word(1, 12)] = g.value(extra, depth+1)
	}
	return out
}

func (g *gen) array(m map[string]any, depth int) []any {
	lo, hi := intKeyword(m, "minItems", 0), intKeyword(m, "maxItems", -1)
	n := g.length(lo, hi, 4)
	items := m["items"]
	out := make([]any, n)
	for i := range out {
		out[i] = g.value(items, depth+1)
	}
	return out
}

// length draws a length in [lo, hi] (hi < 0: unbounded), a boundary a
// quarter of the time: off-by-one bugs live there. A bound past a few
// thousand is drawn as if it were a few thousand.
func (g *gen) length(lo, hi, span int) int {
	if hi < 0 {
		hi = lo + span*4
	}
	hi = min(hi, lo+4096)
	if hi < lo {
		return lo
	}
	switch g.r.IntN(8) {
	case 0:
		return lo
	case 1:
		return hi
	}
	top := min(hi, lo+span)
	return lo + g.r.IntN(top-lo+1)
}

// runes a drawn string is made of: letters and digits mostly, with
// punctuation, quotes, control bytes and characters outside ASCII.
var (
	plainRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
	oddRunes   = []rune(" /\\\"'%&?#:;,<>{}[]\x00\t\néß中文🙂\u202e")
)

func (g *gen) str(m map[string]any) string {
	switch m["format"] {
	case "date-time":
		return g.instant().Format(time.RFC3339)
	case "date":
		return g.instant().Format(time.DateOnly)
	case "time":
		return g.instant().Format("15:04:05Z")
	case "uri", "url", "iri", "uri-reference":
		return "https://" + g.word(1, 10) + ".example.com/" + g.word(0, 20)
	case "hostname", "idn-hostname":
		return g.word(1, 10) + ".example.com"
	case "email", "idn-email":
		return g.word(1, 10) + "@example.com"
	case "uuid":
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	case "duration":
		return fmt.Sprintf("PT%dS", g.r.IntN(3600))
	}
	n := g.length(intKeyword(m, "minLength", 0), intKeyword(m, "maxLength", -1), 24)
	return g.text(n)
}

// text is n characters, one in eight odd.
func (g *gen) text(n int) string {
	var b strings.Builder
	for range n {
		if g.r.IntN(8) == 0 {
			b.WriteRune(oddRunes[g.r.IntN(len(oddRunes))])
		} else {
			b.WriteRune(plainRunes[g.r.IntN(len(plainRunes))])
		}
	}
	return b.String()
}

func (g *gen) word(lo, hi int) string {
	n := lo + g.r.IntN(hi-lo+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[g.r.IntN(36)]
	}
	return string(b)
}

func (g *gen) instant() time.Time {
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	return base.Add(time.Duration(g.r.Int64N(int64(40 * 365 * 24 * time.Hour)))).Truncate(time.Second)
}

func (g *gen) number(m map[string]any, integer bool) any {
	lo, hasLo := floatKeyword(m, "minimum")
	hi, hasHi := floatKeyword(m, "maximum")
	if v, ok := floatKeyword(m, "exclusiveMinimum"); ok {
		lo, hasLo = v+1, true
	}
	if v, ok := floatKeyword(m, "exclusiveMaximum"); ok {
		hi, hasHi = v-1, true
	}
	if !hasLo {
		lo = -1e6
	}
	if !hasHi {
		hi = lo + 2e6
	}
	if hi < lo {
		hi = lo
	}
	var v float64
	switch g.r.IntN(6) {
	case 0:
		v = lo
	case 1:
		v = hi
	default:
		v = lo + g.r.Float64()*(hi-lo)
	}
	if integer {
		return int64(math.Round(math.Max(lo, math.Min(hi, math.Round(v)))))
	}
	return v
}

// anyValue draws a value of any type, for a schema that says nothing.
func (g *gen) anyValue(depth int) any {
	if depth > maxDepth {
		return g.word(0, 8)
	}
	switch g.r.IntN(7) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2:
		return g.r.Int64N(2000) - 1000
	case 3:
		return g.r.NormFloat64() * 1e6
	case 4:
		return g.text(g.r.IntN(16))
	case 5:
		return []any{g.anyValue(depth + 1)}
	}
	return map[string]any{g.word(1, 8): g.anyValue(depth + 1)}
}

// fromExample draws params near the author's example: each of its
// properties kept, dropped (when not required) or drawn afresh, and the
// others added now and then. Near-valid params are the ones admit lets
// through, so these are what reach observe.
func (g *gen) fromExample(schema map[string]any, example map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	required := stringList(schema["required"])
	out := map[string]any{}
	for _, k := range sortedKeys(example) {
		switch g.r.IntN(4) {
		case 0:
			if !slices.Contains(required, k) {
				continue
			}
			out[k] = example[k]
		case 1:
			if p, ok := props[k]; ok {
				if pm, _ := p.(map[string]any); pm == nil || pm["pattern"] == nil || g.r.IntN(4) == 0 {
					out[k] = g.value(p, 1)
					continue
				}
			}
			out[k] = example[k]
		default:
			out[k] = example[k]
		}
	}
	for _, k := range sortedKeys(props) {
		if _, ok := out[k]; !ok && g.r.IntN(3) == 0 {
			out[k] = g.value(props[k], 1)
		}
	}
	return out
}

// generate returns n params: junk first (wrong types, nulls, huge strings,
// deep nesting, per property and for the whole), then values drawn from
// the schema, half of them near the example.
func generate(schema, example json.RawMessage, n int, seed uint64) []json.RawMessage {
	g := newGen(schema, seed)
	root, _ := g.root.(map[string]any)
	var ex map[string]any
	_ = json.Unmarshal(example, &ex)
	var out []json.RawMessage
	add := func(v any) {
		if len(out) >= n {
			return
		}
		if raw, ok := v.(json.RawMessage); ok {
			out = append(out, raw)
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err == nil {
			out = append(out, json.RawMessage(bytes.TrimSpace(buf.Bytes())))
		}
	}
	for _, j := range junk() {
		add(j)
	}
	base := ex
	if base == nil {
		base = map[string]any{}
	}
	props, _ := root["properties"].(map[string]any)
	for _, k := range sortedKeys(props) {
		for _, j := range junkValues() {
			m := clone(base)
			m[k] = j
			add(m)
		}
	}
	for i := 0; len(out) < n; i++ {
		if ex != nil && i%2 == 0 {
			add(g.fromExample(root, ex))
		} else {
			add(g.value(g.root, 0))
		}
	}
	return out
}

// junk is whole params no schema should let through.
func junk() []any {
	return []any{
		nil, true, false, 0, -1, 1.5, "", "params", []any{}, []any{nil},
		map[string]any{}, map[string]any{"": nil},
		json.RawMessage(`1e400`),
		json.RawMessage(strings.Repeat("[", 2000) + strings.Repeat("]", 2000)),
		json.RawMessage(strings.Repeat(`{"a":`, 2000) + "null" + strings.Repeat("}", 2000)),
		strings.Repeat("x", 1<<20),
		manyKeys(2000),
	}
}

// junkValues are the values put into each property in turn.
func junkValues() []any {
	return []any{
		nil, true, 0, -1, int64(math.MaxInt64), json.RawMessage(`-1e400`), 3.25,
		"", " ", "\x00", "\u202e\ufeff🙂", "../../etc/passwd", "1", "true", "null",
		strings.Repeat("x", 64<<10), []any{}, []any{"a", 1, nil}, map[string]any{},
		json.RawMessage(strings.Repeat("[", 500) + strings.Repeat("]", 500)),
		make([]any, 5000),
	}
}

func manyKeys(n int) map[string]any {
	m := make(map[string]any, n)
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = i
	}
	return m
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func stringList(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func intKeyword(m map[string]any, k string, def int) int {
	if v, ok := floatKeyword(m, k); ok && v >= 0 && v < 1<<20 {
		return int(v)
	}
	return def
}

func floatKeyword(m map[string]any, k string) (float64, bool) {
	v, ok := m[k].(float64)
	return v, ok
}
