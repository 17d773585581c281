// Command admitfetch is broken one way: its admit asks the host for a
// fetch (reaching past the SDK, which gives admit none) to see whether the
// URL answers, where admission is configuration only. Target:
// admit.no-fetch.
package main

import (
	"encoding/json"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
)

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/user vigil_fetch
func vigilFetch(offset uint64) uint64

func fetch(url string) {
	req, _ := json.Marshal(sdk.FetchRequest{Method: "HEAD", URL: url})
	off := alloc(uint64(len(req)))
	for i, c := range req {
		storeU8(off+uint64(i), uint32(c))
	}
	vigilFetch(off) // the answer is not even read
}

func init() {
	p := base.Plugin("broken.admitfetch", false)
	p.Admit = func(p base.Params, g sdk.Grants) error {
		if err := base.Admit("broken.admitfetch", p, g); err != nil {
			return err
		}
		fetch(p.URL) // the bug
		return nil
	}
	sdk.Register(p)
}

func main() {}
