package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/sdk/abi"
)

func TestValidateDescribe(t *testing.T) {
	localSchema := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(localSchema, []byte(`{"type":"object"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := func() map[string]any {
		return map[string]any{
			"abi": abi.Version, "kind": "ci", "version": "1.0.0", "summary": "s", "standing": false,
			"default_every": "30s", "params_schema": map[string]any{"type": "object"}, "capabilities": []string{"fetch"},
		}
	}
	tests := []struct {
		name string
		edit func(map[string]any)
		rule string
	}{
		{"valid", func(map[string]any) {}, ""},
		{"not json", nil, "describe.json"},
		{"other abi", func(m map[string]any) { m["abi"] = "vigil.predicate/v2" }, "describe.abi"},
		{"bad kind", func(m map[string]any) { m["kind"] = "CI!" }, "describe.kind"},
		{"empty kind", func(m map[string]any) { m["kind"] = "" }, "describe.kind"},
		{"bad version", func(m map[string]any) { m["version"] = "v1" }, "describe.version"},
		{"no schema", func(m map[string]any) { delete(m, "params_schema") }, "describe.params_schema"},
		{"schema not a schema", func(m map[string]any) { m["params_schema"] = map[string]any{"type": 5} }, "describe.params_schema"},
		{"schema with remote ref", func(m map[string]any) {
			m["params_schema"] = map[string]any{"$ref": "https://example.org/s.json"}
		}, "describe.params_schema"},
		{"schema with file ref", func(m map[string]any) {
			// A readable, valid schema on disk: only the loader refusal stops it.
			m["params_schema"] = map[string]any{"$ref": "file://" + localSchema}
		}, "describe.params_schema"},
		{"unknown capability", func(m map[string]any) { m["capabilities"] = []string{"teleport"} }, "describe.capabilities"},
		{"duplicate capability", func(m map[string]any) { m["capabilities"] = []string{"fetch", "fetch"} }, "describe.capabilities"},
		{"bad every", func(m map[string]any) { m["default_every"] = "often" }, "describe.default_every"},
		{"every too short", func(m map[string]any) { m["default_every"] = "10ms" }, "describe.default_every"},
		{"every too long", func(m map[string]any) { m["default_every"] = "48h" }, "describe.default_every"},
		{"no every", func(m map[string]any) { m["default_every"] = "" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := []byte("{not json")
			if tt.edit != nil {
				m := base()
				tt.edit(m)
				out, _ = json.Marshal(m)
			}
			_, schema, _, bad := validateDescribe(out)
			if tt.rule == "" {
				if bad != nil || schema == nil {
					t.Fatalf("refused: %v", bad)
				}
				return
			}
			if bad == nil || bad.rule != tt.rule {
				t.Fatalf("got %+v, want rule %s", bad, tt.rule)
			}
		})
	}
}

func TestCheckObservation(t *testing.T) {
	tests := []struct {
		name     string
		out      string
		standing bool
		bad      string
	}{
		{"pending", `{"status":"pending","note":"x","next_check":"2030-01-01T00:00:00Z"}`, false, ""},
		{"settled", `{"status":"settled","outcome":{"result":"success"}}`, false, ""},
		{"changed", `{"status":"changed","outcome":{"result":"changed"},"baseline":{"a":1}}`, true, ""},
		{"standing baseline", `{"status":"pending","baseline":{"a":1}}`, true, ""},
		{"unknown status", `{"status":"failed"}`, false, "unknown status"},
		{"unknown field", `{"status":"pending","extra":1}`, false, "unknown field"},
		{"not json", `pending`, false, "observe output"},
		{"trailing", `{"status":"pending"}{}`, false, "trailing"},
		{"settled without outcome", `{"status":"settled"}`, false, "without an outcome"},
		{"settled without result", `{"status":"settled","outcome":{"summary":"x"}}`, false, "without an outcome"},
		{"pending with outcome", `{"status":"pending","outcome":{"result":"x"}}`, false, "pending with an outcome"},
		{"settled from standing", `{"status":"settled","outcome":{"result":"x"}}`, true, "standing kind answered settled"},
		{"changed from wait", `{"status":"changed","outcome":{"result":"x"},"baseline":1}`, false, "changed from a kind"},
		{"changed without baseline", `{"status":"changed","outcome":{"result":"x"}}`, true, "without a baseline"},
		{"baseline settling a wait", `{"status":"settled","outcome":{"result":"x"},"baseline":1}`, false, "baseline on a settled answer"},
		{"baseline kept by a wait", `{"status":"pending","baseline":1}`, false, ""},
		{"settled with next_check", `{"status":"settled","outcome":{"result":"x"},"next_check":"2030-01-01T00:00:00Z"}`, false, "next_check"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkObservation([]byte(tt.out), tt.standing)
			if tt.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.bad) {
				t.Fatalf("err = %v, want %q", err, tt.bad)
			}
		})
	}
}

func TestSchemaNamesTheField(t *testing.T) {
	s, err := compileSchema([]byte(`{"type":"object","properties":{"repo":{"type":"object","properties":{"owner":{"type":"string","minLength":1}},"required":["owner"]}},"required":["repo"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for params, field := range map[string]string{
		`{}`:                           "repo",
		`{"repo":{}}`:                  "repo.owner",
		`{"repo":{"owner":""}}`:        "repo.owner",
		`{"repo":{"owner":5}}`:         "repo.owner",
		`{"repo":{"owner":"x"},"z":1}`: "z",
		`[]`:                           "",
	} {
		got, msg, ok := s.validate([]byte(params))
		if ok || got != field || msg == "" {
			t.Errorf("%s: field %q msg %q ok %v, want field %q", params, got, msg, ok, field)
		}
	}
	if _, _, ok := s.validate([]byte(`{"repo":{"owner":"x"}}`)); !ok {
		t.Error("valid params refused")
	}
}

// A guest that says it ran out of memory and then dumps far more than the
// tail keeps is still known to have run out of memory; so is one whose
// line is split across two writes.
func TestTailBufferNotesOutOfMemory(t *testing.T) {
	tb := &tailBuffer{max: 64}
	_, _ = tb.Write([]byte("fatal error: out of memory\n"))
	_, _ = tb.Write([]byte(strings.Repeat("goroutine 1 [running]:\n", 100)))
	if !tb.oom || strings.Contains(tb.String(), "out of memory") || len(tb.String()) > 64 {
		t.Fatalf("oom %v, tail %q", tb.oom, tb.String())
	}
	tb.reset()
	if tb.oom {
		t.Fatal("reset kept the note")
	}
	_, _ = tb.Write([]byte("fatal error: out of me"))
	_, _ = tb.Write([]byte("mory\n"))
	if !tb.oom {
		t.Fatal("a split line was missed")
	}
	other := &tailBuffer{max: 64}
	_, _ = other.Write([]byte("panic: index out of range"))
	if other.oom {
		t.Fatal("another fatal error read as out of memory")
	}
}
