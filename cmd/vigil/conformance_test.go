package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/internal/wasmbuild"
)

var timerWasm = filepath.Join("..", "..", "plugins", "timer", "timer.wasm")

func TestConformancePassesTheTimer(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "conformance.xml")
	out, _, err := run(t, context.Background(), "conformance", timerWasm, "--cache", wasmbuild.CacheDir(), "--junit", junit)
	if code := exitCodeOf(err); code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	for _, want := range []string{"describe.exports", "robustness.generated-params", "required", "PASS: every required check passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &suite); err != nil || suite.Tests < 20 || suite.Failures != 0 {
		t.Fatalf("junit %+v %v:\n%s", suite, err, b)
	}
}

func TestConformanceFailsAndSays(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.wasm")
	if err := os.WriteFile(bad, []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, context.Background(), "conformance", bad, "--cache", "", "--json")
	if code := exitCodeOf(err); code != 1 {
		t.Fatalf("exit %d (%v), want 1", code, err)
	}
	var rep struct {
		Passed  bool `json:"passed"`
		Results []struct {
			ID, Status, Message, Fix string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Passed || len(rep.Results) == 0 || rep.Results[0].ID != "describe.exports" || rep.Results[0].Status != "fail" ||
		!strings.Contains(rep.Results[0].Message, "does not compile") || rep.Results[0].Fix == "" {
		t.Fatalf("report:\n%s", out)
	}
}

func TestConformanceSelectsAndRefusesBadInput(t *testing.T) {
	out, _, err := run(t, context.Background(), "conformance", timerWasm, "--cache", wasmbuild.CacheDir(), "--run", `^describe\.`, "--skip", "semver")
	if err != nil || strings.Contains(out, "admit.") || strings.Contains(out, "describe.semver") || !strings.Contains(out, "describe.abi") {
		t.Fatalf("err %v:\n%s", err, out)
	}
	for _, args := range [][]string{
		{"conformance"},
		{"conformance", filepath.Join(t.TempDir(), "missing.wasm")},
		{"conformance", timerWasm, "--run", "("},
		{"conformance", timerWasm, "--cases", filepath.Join(t.TempDir(), "missing")},
	} {
		if _, _, err := run(t, context.Background(), args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
