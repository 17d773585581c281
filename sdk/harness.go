package sdk

import (
	"encoding/json"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Harness runs a plugin's describe, admit, observe and wake natively,
// through the same JSON dispatch the wasm exports use. It is for an
// author's unit tests: what passes here differs from the built plugin
// only in the ABI glue, and in one step the host adds: before admit, the
// host validates params against the plugin's Schema, which the harness
// does not.
type Harness struct{ h handler }

// NewHarness validates p as Register would and wraps it.
func NewHarness[P any](p Plugin[P]) *Harness { return &Harness{h: newHandler(p)} }

// Describe runs describe.
func (h *Harness) Describe() (abi.Describe, error) {
	var d abi.Describe
	out, err := h.h.describe()
	if err != nil {
		return d, err
	}
	return d, json.Unmarshal(out, &d)
}

// Admit runs admit.
func (h *Harness) Admit(req abi.AdmitRequest) (abi.AdmitResponse, error) {
	var r abi.AdmitResponse
	in, err := json.Marshal(req)
	if err != nil {
		return r, err
	}
	out, err := h.h.admit(in)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(out, &r)
}

// Observe runs observe, with fetches going to f (nil: every fetch fails
// as unavailable).
func (h *Harness) Observe(req abi.ObserveRequest, f Fetcher) (abi.ObserveResponse, error) {
	var r abi.ObserveResponse
	in, err := json.Marshal(req)
	if err != nil {
		return r, err
	}
	out, err := h.h.observe(in, f)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(out, &r)
}

// Wake runs wake: the keys the plugin's Wake answers for req, held to the
// contract as the built plugin holds them (repeats dropped, bounds
// checked). A plugin without Wake answers an error.
func (h *Harness) Wake(req abi.WakeRequest) (abi.WakeResponse, error) {
	var r abi.WakeResponse
	in, err := json.Marshal(req)
	if err != nil {
		return r, err
	}
	out, err := h.h.wake(in)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(out, &r)
}
