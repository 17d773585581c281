package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"runtime/debug"
	"time"
)

// The debug listener (--debug-listen, off by default) serves Go's
// profiles (/debug/pprof/) and POST /debug/free, which collects the
// garbage and returns the free memory to the system at once
// (debug.FreeOSMemory) and answers the memory figures after it: what an
// operator, or a benchmark, reads a resident size after. It is never the
// API's listener and binds to loopback only: a profile shows the
// process's internals, and it has no authentication.

// debugLoopback refuses a debug listen address that is not loopback.
func debugLoopback(listen string) error {
	return bindsLoopback(listen, "the debug listener has no authentication, so it binds to loopback only (127.0.0.1 or ::1)")
}

// freed is POST /debug/free's answer: the Go runtime's memory after the
// collection, in bytes.
type freed struct {
	HeapInuse    uint64 `json:"heap_inuse"`
	HeapIdle     uint64 `json:"heap_idle"`
	HeapReleased uint64 `json:"heap_released"`
	Sys          uint64 `json:"sys"`
	TookMS       int64  `json:"took_ms"`
}

// debugMux is the debug listener's routes.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("POST /debug/free", func(w http.ResponseWriter, _ *http.Request) {
		t0 := time.Now()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(freed{
			HeapInuse: ms.HeapInuse, HeapIdle: ms.HeapIdle, HeapReleased: ms.HeapReleased, Sys: ms.Sys,
			TookMS: time.Since(t0).Milliseconds(),
		})
	})
	return mux
}

// serveDebug serves the debug listener on addr until ctx ends; the stop
// it returns shuts it down and waits for it.
func serveDebug(ctx context.Context, addr string, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: debugMux(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the debug listener stopped", "err", err)
		}
	}()
	log.Info("debug listener", "listen", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-done
	}, nil
}
