package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The debug listener has no authentication: an address that is not
// loopback is refused at start, naming the key.
func TestTheDebugListenerBindsToLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6060": true, "[::1]:6060": true, "localhost:6060": true,
		"0.0.0.0:6060": false, "10.0.0.1:6060": false, ":6060": false, "nonsense": false,
	} {
		s := defaultSettings()
		s.DebugListen = addr
		err := s.validate(map[string]string{"debug_listen": "--debug-listen"})
		if ok != (err == nil) {
			t.Errorf("debug_listen %q: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "debug_listen") {
			t.Errorf("debug_listen %q: the error does not name the key: %v", addr, err)
		}
	}
}

// POST /debug/free collects and returns free memory, answering the
// runtime's figures after it; a GET is not a way to trigger it, and the
// profiles' index answers.
func TestDebugFreeCollectsAndAnswersTheFigures(t *testing.T) {
	srv := httptest.NewServer(debugMux())
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/debug/free", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var f freed
	err = json.NewDecoder(resp.Body).Decode(&f)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || f.HeapInuse == 0 || f.Sys == 0 {
		t.Fatalf("POST /debug/free: %d %+v %v", resp.StatusCode, f, err)
	}
	if resp, err := http.Get(srv.URL + "/debug/free"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /debug/free: %v %v, want 405", resp.StatusCode, err)
	}
	if resp, err := http.Get(srv.URL + "/debug/pprof/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /debug/pprof/: %v %v, want 200", resp.StatusCode, err)
	}
}
