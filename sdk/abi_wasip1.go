//go:build wasip1

package sdk

import (
	"encoding/binary"
	"encoding/json"
	"errors"

	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/sdk/internal/export"
)

// The Extism kernel, module extism:host/env. Offsets and lengths are i64.
// input_load_u64, load_u64 and store_u64 are plain Go host functions in the
// Extism go-sdk; the others call into the kernel's own wasm module and cost
// more, so the SDK calls them a fixed handful of times per export.

//go:wasmimport extism:host/env input_length
func extismInputLength() uint64

//go:wasmimport extism:host/env input_load_u64
func extismInputLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env input_load_u8
func extismInputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env alloc
func extismAlloc(n uint64) uint64

//go:wasmimport extism:host/env free
func extismFree(offset uint64)

//go:wasmimport extism:host/env length
func extismLength(offset uint64) uint64

//go:wasmimport extism:host/env load_u64
func extismLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env load_u8
func extismLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env store_u64
func extismStoreU64(offset uint64, v uint64)

//go:wasmimport extism:host/env store_u8
func extismStoreU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func extismOutputSet(offset, n uint64)

//go:wasmimport extism:host/env error_set
func extismErrorSet(offset uint64)

//go:wasmimport extism:host/env config_get
func extismConfigGet(offset uint64) uint64

//go:wasmimport extism:host/env log_info
func extismLogInfo(offset uint64)

//go:wasmimport extism:host/env log_warn
func extismLogWarn(offset uint64)

//go:wasmimport extism:host/env log_error
func extismLogError(offset uint64)

// vigil_fetch takes a kernel block holding an abi.FetchRequest and returns
// one holding an abi.FetchResponse.
//
//go:wasmimport extism:host/user vigil_fetch
func vigilFetch(offset uint64) uint64

// vigil_extraction_failed takes a kernel block holding an
// abi.ExtractionFailedRequest and returns one holding an
// abi.ExtractionFailedResponse.
//
//go:wasmimport extism:host/user vigil_extraction_failed
func vigilExtractionFailed(offset uint64) uint64

// vigil_exec takes a kernel block holding an abi.ExecRequest and returns
// one holding an abi.ExecResponse.
//
//go:wasmimport extism:host/user vigil_exec
func vigilExec(offset uint64) uint64

//go:wasmexport describe
func exportDescribe() int32 {
	return serve(func([]byte) ([]byte, error) { return current().describe() })
}

//go:wasmexport admit
func exportAdmit() int32 {
	return serve(func(in []byte) ([]byte, error) { return current().admit(in) })
}

//go:wasmexport observe
func exportObserve() int32 {
	return serve(func(in []byte) ([]byte, error) { return current().observe(in, hostFetcher{}) })
}

// The wake export lives in package sdk/wake, so only a plugin that
// imports it exports wake; its body is this one.
func init() {
	export.Wake = func() int32 {
		return serve(func(in []byte) ([]byte, error) { return current().wake(in) })
	}
}

// wakeLinkProblem says what is wrong when the plugin's Wake and the wake
// export disagree: a Wake the host would never call, or an export that
// answers nothing.
func wakeLinkProblem(hasWake bool) error {
	switch {
	case hasWake && !export.WakeLinked:
		return errors.New(`Wake is set, and the module does not export wake: import _ "github.com/vigilhq/vigil/sdk/wake"`)
	case !hasWake && export.WakeLinked:
		return errors.New(`the module exports wake (it imports github.com/vigilhq/vigil/sdk/wake), and Wake is not set`)
	}
	return nil
}

func current() handler {
	if registered == nil {
		return errHandler{errors.New("sdk: no plugin registered: call sdk.Register from init")}
	}
	return registered
}

// serve runs one export: input in, output or error out. It never lets a
// panic escape, because an escaped panic traps the instance.
func serve(f func([]byte) ([]byte, error)) (rc int32) {
	defer func() {
		if r := recover(); r != nil {
			setError("sdk: panic: " + panicString(r))
			rc = 1
		}
	}()
	out, err := f(readInput())
	if err != nil {
		setError(err.Error())
		return 1
	}
	off := writeBlock(out)
	if off == 0 {
		setError("sdk: kernel out of memory for output")
		return 1
	}
	extismOutputSet(off, uint64(len(out)))
	return 0
}

func panicString(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return "non-error value"
}

func readInput() []byte {
	n := extismInputLength()
	buf := make([]byte, n)
	if n < 8 {
		for i := uint64(0); i < n; i++ {
			buf[i] = byte(extismInputLoadU8(i))
		}
		return buf
	}
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], extismInputLoadU64(i))
	}
	if i < n { // one overlapping read covers the tail
		binary.LittleEndian.PutUint64(buf[n-8:], extismInputLoadU64(n-8))
	}
	return buf
}

// writeBlock copies b into a new kernel block of exactly len(b) bytes and
// returns its offset, or 0 when the kernel is out of memory. Whole words go
// 8 bytes a call and the tail is one overlapping word, so a block costs
// len/8+1 stores; only a block under 8 bytes is written byte by byte.
func writeBlock(b []byte) uint64 {
	n := uint64(len(b))
	off := extismAlloc(n)
	if off == 0 {
		return 0
	}
	if n < 8 {
		for i := uint64(0); i < n; i++ {
			extismStoreU8(off+i, uint32(b[i]))
		}
		return off
	}
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		extismStoreU64(off+i, binary.LittleEndian.Uint64(b[i:]))
	}
	if i < n {
		extismStoreU64(off+n-8, binary.LittleEndian.Uint64(b[n-8:]))
	}
	return off
}

// readBlock copies a kernel block out and frees it.
func readBlock(off uint64) []byte {
	n := extismLength(off)
	buf := make([]byte, n)
	if n < 8 {
		for i := uint64(0); i < n; i++ {
			buf[i] = byte(extismLoadU8(off + i))
		}
	} else {
		i := uint64(0)
		for ; i+8 <= n; i += 8 {
			binary.LittleEndian.PutUint64(buf[i:], extismLoadU64(off+i))
		}
		if i < n {
			binary.LittleEndian.PutUint64(buf[n-8:], extismLoadU64(off+n-8))
		}
	}
	extismFree(off)
	return buf
}

func setError(msg string) {
	if off := writeBlock([]byte(msg)); off != 0 {
		extismErrorSet(off)
	}
}

// hostFetcher is the Fetcher inside a plugin: the host function vigil_fetch.
type hostFetcher struct{}

func (hostFetcher) Fetch(req FetchRequest) (FetchResponse, error) {
	var resp FetchResponse
	in, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	off := writeBlock(in)
	if off == 0 {
		return resp, &FetchError{Reason: abi.FetchUnavailable, Message: "kernel out of memory"}
	}
	out := readBlock(vigilFetch(off))
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, &FetchError{Reason: abi.FetchUnavailable, Message: "host answered malformed JSON: " + err.Error()}
	}
	return resp, nil
}

// ExtractionFailed makes hostFetcher the ExtractionReporter inside a
// plugin too: the host function vigil_extraction_failed.
func (hostFetcher) ExtractionFailed(req ExtractionFailedRequest) (ExtractionFailedResponse, error) {
	var resp ExtractionFailedResponse
	in, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	off := writeBlock(in)
	if off == 0 {
		return resp, &FetchError{Reason: abi.FetchUnavailable, Message: "kernel out of memory"}
	}
	out := readBlock(vigilExtractionFailed(off))
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, &FetchError{Reason: abi.FetchUnavailable, Message: "host answered malformed JSON: " + err.Error()}
	}
	return resp, nil
}

// Exec makes hostFetcher the Execer inside a plugin too: the host function
// vigil_exec.
func (hostFetcher) Exec(req ExecRequest) (ExecResponse, error) {
	var resp ExecResponse
	in, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	off := writeBlock(in)
	if off == 0 {
		return resp, &FetchError{Reason: abi.ExecUnavailable, Message: "kernel out of memory"}
	}
	out := readBlock(vigilExec(off))
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, &FetchError{Reason: abi.ExecUnavailable, Message: "host answered malformed JSON: " + err.Error()}
	}
	return resp, nil
}

// Config returns the value of key in the plugin's Extism config.
func Config(key string) (string, bool) {
	k := writeBlock([]byte(key))
	if k == 0 {
		return "", false
	}
	off := extismConfigGet(k)
	extismFree(k)
	if off == 0 {
		return "", false
	}
	return string(readBlock(off)), true
}

// Log hands msg to the Extism kernel's log_info, log_warn or log_error.
// The vigil host sets no Extism log level, so it discards them today
// (docs/abi.md): a plugin's word to the operator belongs in its note.
// Logs are diagnostics: never put params or fetched bodies in them.
func Log(level LogLevel, msg string) {
	off := writeBlock([]byte(msg))
	if off == 0 {
		return
	}
	switch level {
	case LogWarn:
		extismLogWarn(off)
	case LogError:
		extismLogError(off)
	default:
		extismLogInfo(off)
	}
}
