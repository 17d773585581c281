// Command sandbox is a test plugin that tries to leave its sandbox, one way
// per params.try: read a host file, call Extism's own http_request, or read
// the wall clock. Its note says what it saw.
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"github.com/vigilhq/vigil/sdk"
)

type Params struct {
	Try string `json:"try"`
	URL string `json:"url,omitempty"`
}

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u64
func storeU64(offset, v uint64)

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env http_request
func httpRequest(req, body uint64) uint64

func block(s string) uint64 {
	off := alloc(uint64(len(s)))
	b := []byte(s)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		storeU64(off+uint64(i), binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < len(b); i++ {
		storeU8(off+uint64(i), uint32(b[i]))
	}
	return off
}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.sandbox", Version: "1.0.0", Schema: `{"type":"object"}`,
		Observe: func(p Params, _ sdk.Input) (sdk.Result, error) {
			switch p.Try {
			case "fs":
				_, err := os.ReadFile("/etc/hostname")
				return sdk.Pending(fmt.Sprintf("fs: %v", err)), nil
			case "http":
				resp := httpRequest(block(`{"url":"`+p.URL+`","method":"GET"}`), 0)
				return sdk.Pending(fmt.Sprintf("http: answered %d", resp)), nil
			case "clock":
				return sdk.Pending("clock: " + time.Now().UTC().Format(time.RFC3339)), nil
			}
			return sdk.Pending("nothing tried"), nil
		},
	})
}

func main() {}
