package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// invalidProbe is params the schema or admit must refuse, naming field
// ("": any field).
type invalidProbe struct {
	what   string
	params json.RawMessage
	field  string
}

// unknownField is the property the suite adds to the example to see a
// misspelt param refused.
const unknownField = "conformance_unknown_field"

func (s *suite) admitChecks(ctx context.Context) {
	t := time.Now()
	st, msg := s.admitExample(ctx)
	s.record(AdmitExample, st, time.Since(t), "%s", msg)
	if s.example == nil {
		s.skipAll("needs the example admitted (admit.example)", needsExample...)
	}
	s.probes = s.invalidProbes()
	s.timed(AdmitRefusesInvalid, func() (Status, string) { return s.refusesInvalid(ctx) })
	s.timed(AdmitDeterministic, func() (Status, string) { return s.admitDeterministic(ctx) })
	s.timed(AdmitNamesDests, s.namesDestinations)
}

func (s *suite) admitExample(ctx context.Context) (Status, string) {
	ex := s.info.Example
	if len(ex) == 0 || string(ex) == "null" {
		return Fail, "describe gives no example params, so every check that needs params is skipped: " + strings.Join(needsExample, ", ")
	}
	a, err := s.admit(ctx, ex)
	if errors.Is(err, plugin.ErrBadDestinations) {
		return Skip, fmt.Sprintf("the answer to the example %s names destinations off the contract: fix admit.destinations first; every check that needs params is skipped", clip(ex))
	}
	if errors.Is(err, plugin.ErrBadNextCheck) {
		return Skip, fmt.Sprintf("the answer to the example %s names a next_check off the contract: fix admit.next-check first; every check that needs params is skipped", clip(ex))
	}
	if err != nil {
		return Fail, fmt.Sprintf("the example %s is not admitted: %v; every check that needs params is skipped", clip(ex), err)
	}
	s.example = ex
	s.exampleAdm = &a
	msg := "admitted " + clip(ex)
	if !a.Deadline.IsZero() {
		msg += ", natural deadline " + a.Deadline.Format(time.RFC3339)
	}
	if !a.NextCheck.IsZero() {
		msg += ", first check " + a.NextCheck.Format(time.RFC3339)
	}
	return Pass, msg
}

// invalidProbes makes params the plugin must refuse, each naming the field
// the refusal must name: the whole params as another type; and, from the
// admitted example, each required property missing, each typed property
// given another type, and an unknown property (unless the schema allows
// more properties).
func (s *suite) invalidProbes() []invalidProbe {
	var schema map[string]any
	if json.Unmarshal(s.info.Schema, &schema) != nil {
		return nil
	}
	props, _ := schema["properties"].(map[string]any)
	isObject := schema["type"] == "object" || props != nil
	if !isObject {
		return nil
	}
	var out []invalidProbe
	for _, v := range []string{`[]`, `"conformance"`, `42`, `null`} {
		// Any field will do: the host names "params", a plugin's own
		// admit may name the first property it misses.
		out = append(out, invalidProbe{"params " + v, json.RawMessage(v), ""})
	}
	var ex map[string]any
	if s.example == nil || json.Unmarshal(s.example, &ex) != nil || ex == nil {
		return out
	}
	add := func(what string, m map[string]any, field string) {
		b, err := json.Marshal(m)
		if err == nil {
			out = append(out, invalidProbe{what, b, "params." + field})
		}
	}
	for _, k := range stringList(schema["required"]) {
		m := clone(ex)
		delete(m, k)
		add(fmt.Sprintf("required %q missing", k), m, k)
	}
	for _, k := range sortedKeys(props) {
		p, _ := props[k].(map[string]any)
		if v, ok := wrongValue(p); ok {
			m := clone(ex)
			m[k] = v
			add(fmt.Sprintf("%q as %s", k, jsonString(v)), m, k)
		}
	}
	_, patterned := schema["patternProperties"]
	if ap, set := schema["additionalProperties"]; (!set || ap == false) && !patterned && props != nil {
		if _, clash := props[unknownField]; !clash {
			m := clone(ex)
			m[unknownField] = true
			add(fmt.Sprintf("unknown property %q", unknownField), m, unknownField)
		}
	}
	return out
}

// wrongValue is a value property schema p refuses: outside its enum or
// const, or of a type it does not allow. False when p says neither.
func wrongValue(p map[string]any) (any, bool) {
	if p == nil {
		return nil, false
	}
	if _, ok := p["const"]; ok {
		return "conformance-not-the-const", true
	}
	if e, ok := p["enum"].([]any); ok {
		for _, v := range []any{"conformance-not-in-enum", 987654321.0, true} {
			if !containsJSON(e, v) {
				return v, true
			}
		}
		return nil, false
	}
	var types []string
	switch t := p["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		types = stringList(t)
	}
	if len(types) == 0 {
		return nil, false
	}
	for _, c := range []struct {
		v     any
		types []string
	}{
		{12345.5, []string{"number"}},
		{"conformance", []string{"string"}},
		{true, []string{"boolean"}},
		{[]any{}, []string{"array"}},
	} {
		if !overlaps(types, c.types) {
			return c.v, true
		}
	}
	return nil, false
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func containsJSON(list []any, v any) bool {
	want := jsonString(v)
	for _, x := range list {
		if jsonString(x) == want {
			return true
		}
	}
	return false
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (s *suite) refusesInvalid(ctx context.Context) (Status, string) {
	if len(s.probes) == 0 {
		return Skip, "the params schema does not describe an object: the suite has no params to make invalid"
	}
	var bad []string
	for _, p := range s.probes {
		_, err := s.admit(ctx, p.params)
		if msg := refusalProblem(err, p.field); msg != "" {
			bad = append(bad, p.what+": "+msg)
		}
	}
	if len(bad) > 0 {
		return Fail, fmt.Sprintf("%d of %d invalid params not refused as they must be: %s", len(bad), len(s.probes), strings.Join(bad, "; "))
	}
	msg := fmt.Sprintf("%d invalid params refused, each naming its field", len(s.probes))
	if s.example == nil {
		msg += " (params as other types only: the example was not admitted, so no property was probed)"
	}
	return Pass, msg
}

// refusalProblem says what is wrong with admit's answer to invalid params
// that must be refused as invalid_params naming field.
func refusalProblem(err error, field string) string {
	var ref *api.Error
	switch {
	case err == nil:
		return "admitted"
	case !errors.As(err, &ref):
		return "no refusal, an error: " + err.Error()
	case ref.Code != api.CodeInvalidParams:
		return fmt.Sprintf("refused as %s, want %s", ref.Code, api.CodeInvalidParams)
	case ref.Message == "":
		return "refused with no message"
	case ref.Field == "":
		return "refused naming no field"
	case field != "" && ref.Field != field:
		return fmt.Sprintf("refused naming %q, want %q", ref.Field, field)
	}
	return ""
}

func (s *suite) admitDeterministic(ctx context.Context) (Status, string) {
	inputs := []json.RawMessage{}
	if s.example != nil {
		inputs = append(inputs, s.example)
	}
	for _, p := range s.probes {
		inputs = append(inputs, p.params)
	}
	if len(inputs) == 0 {
		return Skip, "no params to admit: no example, and the schema does not describe an object"
	}
	for _, in := range inputs {
		a1, e1 := s.admit(ctx, in)
		a2, e2 := s.admit(ctx, in)
		if k1, k2 := admitKey(a1, e1), admitKey(a2, e2); k1 != k2 {
			return Fail, fmt.Sprintf("admitting %s answered %s, then %s", clip(in), k1, k2)
		}
	}
	return Pass, fmt.Sprintf("%d params admitted twice each, the same answer each time", len(inputs))
}

// destinationsOnContract fails when any admit the suite made answered
// destinations off the contract (the runtime holds them to it and makes
// such an answer a fault).
func (s *suite) destinationsOnContract() (Status, string) {
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	if n := len(s.badDests); n > 0 {
		return Fail, fmt.Sprintf("%d admit answer(s) named destinations off the contract; first: %s", n, s.badDests[0])
	}
	if s.exampleAdm == nil {
		return Pass, fmt.Sprintf("%d admit calls, none naming destinations off the contract (the example was not admitted, so its own are unknown)", s.admits.Load())
	}
	return Pass, fmt.Sprintf("%d admit calls, none naming destinations off the contract; the example names %s", s.admits.Load(), destList(s.exampleAdm.Destinations))
}

// nextCheckOnContract fails when any admit the suite made answered a
// next_check off the contract (the runtime holds it to the contract and
// makes such an answer a fault).
func (s *suite) nextCheckOnContract() (Status, string) {
	s.admitMu.Lock()
	defer s.admitMu.Unlock()
	if n := len(s.badNextChecks); n > 0 {
		return Fail, fmt.Sprintf("%d admit answer(s) named a next_check off the contract; first: %s", n, s.badNextChecks[0])
	}
	first := "none: the watch is probed at once"
	switch {
	case s.exampleAdm == nil:
		first = "unknown (the example was not admitted)"
	case !s.exampleAdm.NextCheck.IsZero():
		first = s.exampleAdm.NextCheck.Format(time.RFC3339Nano)
	}
	return Pass, fmt.Sprintf("%d admit calls, none naming a next_check off the contract; the example's first check: %s", s.admits.Load(), first)
}

// namesDestinations advises a kind that fetches to name where.
func (s *suite) namesDestinations() (Status, string) {
	switch {
	case !slices.Contains(s.info.Capabilities, abi.CapabilityFetch):
		return Pass, "the kind does not fetch: nothing to name"
	case s.exampleAdm == nil:
		return Skip, "needs the example admitted (admit.example)"
	case len(s.exampleAdm.Destinations) == 0:
		return Fail, "the kind declares fetch, and admitting the example names no destination: the host cannot refuse at registration a watch whose every fetch its guard or grants will refuse"
	}
	return Pass, "admitting the example names " + destList(s.exampleAdm.Destinations)
}

func destList(ds []abi.Destination) string {
	if len(ds) == 0 {
		return "no destinations"
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Target
		if d.Field != "" {
			out[i] += " (" + d.Field + ")"
		}
	}
	return strings.Join(out, ", ")
}

func admitKey(a kind.Admission, err error) string {
	if err != nil {
		return "error " + err.Error()
	}
	key := "ok"
	if !a.Deadline.IsZero() {
		key += ", deadline " + a.Deadline.Format(time.RFC3339Nano)
	}
	if len(a.Destinations) > 0 {
		key += ", destinations " + destList(a.Destinations)
	}
	if !a.NextCheck.IsZero() {
		key += ", next_check " + a.NextCheck.Format(time.RFC3339Nano)
	}
	if a.PartitionKey != "" {
		// A key that moves scatters one resource's watches over a
		// cluster's nodes, each reading it.
		key += fmt.Sprintf(", partition key %q", a.PartitionKey)
	}
	return key
}
