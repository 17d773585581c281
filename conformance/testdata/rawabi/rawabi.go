//go:build wasip1

// Package rawabi is a predicate written against the Extism ABI without
// vigil's SDK, as a plugin in another language would be, for the broken
// plugins whose mistake the SDK makes impossible. The kind is a timer:
// params {"at": RFC 3339}, pending until the input's now reaches it.
//
// A plugin's main package exports describe, admit and observe and calls
// Describe, Admit and Observe from them.
package rawabi

import (
	"encoding/json"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

//go:wasmimport extism:host/env error_set
func errorSet(offset uint64)

// Plugin is what differs between the raw plugins.
type Plugin struct {
	Kind    string
	Version string
	// CheckKind makes observe raise on a call for another kind, as the
	// contract requires.
	CheckKind bool
	// Destinations, when set, is the JSON admit's ok answer carries as
	// its destinations, verbatim.
	Destinations string
	// FirstCheck, when set, is admit's ok answer's next_check, from the
	// params' instant.
	FirstCheck func(at time.Time) time.Time
	// WakeAnswer is what the wake export answers, verbatim, whatever the
	// event (a main package that exports wake calls Wake).
	WakeAnswer string
}

const schema = `{"type":"object","properties":{"at":{"type":"string","format":"date-time"}},` +
	`"required":["at"],"additionalProperties":false}`

// Describe answers describe.
func (p Plugin) Describe() int32 {
	out, _ := json.Marshal(abi.Describe{
		ABI: abi.Version, Kind: p.Kind, Version: p.Version, Summary: "a raw-ABI test timer",
		DefaultEvery: "1m0s", ParamsSchema: json.RawMessage(schema), Capabilities: []string{},
		Example: json.RawMessage(`{"at":"2030-01-01T14:00:00Z"}`),
	})
	return output(out)
}

type params struct {
	At time.Time `json:"at"`
}

// Admit answers admit.
func (p Plugin) Admit() int32 {
	var req abi.AdmitRequest
	if err := json.Unmarshal(input(), &req); err != nil {
		return fail("admit input: " + err.Error())
	}
	if req.Kind != p.Kind {
		return fail("call for kind " + req.Kind + " reached " + p.Kind)
	}
	var ps params
	if err := abi.StrictUnmarshal(req.Params, &ps); err != nil {
		return respond(abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: "at", Message: err.Error()})
	}
	d := ps.At.Add(time.Minute).UTC()
	resp := abi.AdmitResponse{OK: true, Deadline: &d}
	if p.FirstCheck != nil {
		n := p.FirstCheck(ps.At).UTC()
		resp.NextCheck = &n
	}
	if p.Destinations != "" {
		if err := json.Unmarshal([]byte(p.Destinations), &resp.Destinations); err != nil {
			return fail("rawabi: Destinations: " + err.Error())
		}
	}
	return respond(resp)
}

// Observe answers observe.
func (p Plugin) Observe() int32 {
	var req abi.ObserveRequest
	if err := json.Unmarshal(input(), &req); err != nil {
		return fail("observe input: " + err.Error())
	}
	if p.CheckKind && req.Kind != p.Kind {
		return fail("call for kind " + req.Kind + " reached " + p.Kind + " (a routing bug)")
	}
	var ps params
	if err := json.Unmarshal(req.Params, &ps); err != nil {
		return respond(abi.ObserveResponse{Status: abi.StatusPending, Note: "could not read params"})
	}
	if req.Now.Before(ps.At) {
		at := ps.At.UTC()
		return respond(abi.ObserveResponse{Status: abi.StatusPending, Note: "not yet", NextCheck: &at})
	}
	return respond(abi.ObserveResponse{Status: abi.StatusSettled,
		Outcome: &abi.Outcome{Result: "fired", Summary: "reached " + ps.At.UTC().Format(time.RFC3339)}})
}

// Wake answers wake with WakeAnswer.
func (p Plugin) Wake() int32 { return output([]byte(p.WakeAnswer)) }

func input() []byte {
	b := make([]byte, inputLength())
	for i := range b {
		b[i] = byte(inputLoadU8(uint64(i)))
	}
	return b
}

func block(b []byte) uint64 {
	off := alloc(uint64(len(b)))
	for i, c := range b {
		storeU8(off+uint64(i), uint32(c))
	}
	return off
}

func output(b []byte) int32 {
	outputSet(block(b), uint64(len(b)))
	return 0
}

func respond(v any) int32 {
	b, err := json.Marshal(v)
	if err != nil {
		return fail(err.Error())
	}
	return output(b)
}

func fail(msg string) int32 {
	errorSet(block([]byte(msg)))
	return 1
}
