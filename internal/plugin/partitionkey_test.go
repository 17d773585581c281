package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// Admit's partition_key is the Admission's PartitionKey; none is empty.
func TestAdmitCarriesThePartitionKey(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	for _, key := range []string{"https://status.example.com/health", strings.Repeat("k", abi.MaxPartitionKey), "ticket 7 ✓"} {
		answer, _ := json.Marshal(abi.AdmitResponse{OK: true, PartitionKey: key})
		adm, err := admitAnswer(r, string(answer))
		if err != nil || adm.PartitionKey != key {
			t.Fatalf("admit = %+v, %v; want the key %.40q", adm, err, key)
		}
	}
	adm, err := admitAnswer(r, `{"ok":true}`)
	if err != nil || adm.PartitionKey != "" {
		t.Fatalf("admit = %+v, %v; want no key", adm, err)
	}
}

// A partition key off the contract (over the bound, on a refusal) is the
// plugin's fault, never a refusal that would blame the caller; the plugin
// keeps serving.
func TestAPartitionKeyOffTheContractIsAFault(t *testing.T) {
	r := destsRuntime(t, `{"capabilities":["fetch"],"fetch_hosts":["*"]}`)
	long, _ := json.Marshal(abi.AdmitResponse{OK: true, PartitionKey: strings.Repeat("k", abi.MaxPartitionKey+1)})
	for name, answer := range map[string]string{
		"over the bound": string(long),
		"on a refusal":   `{"ok":false,"code":"invalid_params","message":"no","partition_key":"k"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := admitAnswer(r, answer)
			var ce *kind.CallError
			var ref *api.Error
			if !errors.As(err, &ce) || ce.Reason != kind.FaultContract || !errors.Is(err, ErrBadPartitionKey) || errors.As(err, &ref) {
				t.Fatalf("admit = %v; want a bad_output fault answering ErrBadPartitionKey", err)
			}
		})
	}
	if _, err := admitAnswer(r, `{"ok":true,"partition_key":"k"}`); err != nil {
		t.Fatal(err)
	}
}

// The http plugin, built from its source (not the committed .wasm, which
// is rebuilt apart), names one key for one URL however it is written, and
// another for another URL, through the host.
func TestHTTPPluginNamesItsURLAsThePartitionKey(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, builder.Build(t, filepath.Join("..", "..", "plugins", "http")), filepath.Join(dir, "http.wasm"))
	if err := os.WriteFile(filepath.Join(dir, RegistryFile), []byte(`{"kinds":{"http":{"capabilities":["fetch"],"fetch_hosts":["*"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, Config{Bundled: fstest.MapFS{}, Dir: dir, Limits: Limits{CallTimeout: 10 * time.Second}})
	key := func(u string) string {
		t.Helper()
		adm, err := r.Admit(context.Background(), "http", json.RawMessage(`{"url":"`+u+`"}`))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		return adm.PartitionKey
	}
	a := key("https://status.example.com/health")
	if a != "https://status.example.com/health" || key("https://Status.Example.com:443/health#x") != a {
		t.Fatalf("key %q; want the URL, one for both spellings", a)
	}
	if key("https://status.example.com/ready") == a {
		t.Fatal("two URLs share a key")
	}
}
