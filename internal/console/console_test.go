package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func mustNew(t *testing.T) *Console {
	t.Helper()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, c *Console, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	return rec
}

// Every asset answers with its type, an ETag, no-cache and the CSP; the
// page is served at / too.
func TestAssetsAnswerWithTypeETagAndCSP(t *testing.T) {
	c := mustNew(t)
	for path, want := range map[string]string{
		"/":                                "text/html; charset=utf-8",
		"/console/index.html":              "text/html; charset=utf-8",
		"/console/app.js":                  "text/javascript; charset=utf-8",
		"/console/app.css":                 "text/css; charset=utf-8",
		"/console/icon.svg":                "image/svg+xml",
		"/console/vendor/preact.module.js": "text/javascript; charset=utf-8",
		"/console/vendor/LICENSE-preact":   "text/plain; charset=utf-8",
	} {
		rec := get(t, c, path, nil)
		if rec.Code != 200 || rec.Header().Get("Content-Type") != want {
			t.Errorf("%s: %d %q, want 200 %q", path, rec.Code, rec.Header().Get("Content-Type"), want)
		}
		if rec.Header().Get("ETag") == "" || rec.Header().Get("Cache-Control") != "no-cache" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, rec.Header())
		}
		if rec.Header().Get("Content-Security-Policy") != c.CSP() {
			t.Errorf("%s: CSP %q", path, rec.Header().Get("Content-Security-Policy"))
		}
	}
	if rec := get(t, c, "/console/nope.js", nil); rec.Code != 404 {
		t.Errorf("an unknown asset: %d", rec.Code)
	}
	if c.Serves("/api/v1/watches") || c.Serves("/metrics") || !c.Serves("/") {
		t.Error("Serves claims a path outside the console, or not the page")
	}
}

// A request holding the asset's ETag is answered 304 without a body; a
// stale one gets the body.
func TestETagRevalidates(t *testing.T) {
	c := mustNew(t)
	first := get(t, c, "/console/app.js", nil)
	etag := first.Header().Get("ETag")
	if rec := get(t, c, "/console/app.js", map[string]string{"If-None-Match": etag}); rec.Code != 304 || rec.Body.Len() != 0 {
		t.Errorf("revalidation: %d, %d bytes", rec.Code, rec.Body.Len())
	}
	if rec := get(t, c, "/console/app.js", map[string]string{"If-None-Match": `"stale"`}); rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), first.Body.Bytes()) {
		t.Errorf("a stale ETag: %d", rec.Code)
	}
	if other := get(t, c, "/console/app.css", nil).Header().Get("ETag"); other == etag {
		t.Error("two assets share an ETag")
	}
}

// The policy is self only: no other host, no inline script but the import
// map (by its hash), no eval, no framing.
func TestCSPIsSelfOnly(t *testing.T) {
	csp := mustNew(t).CSP()
	for _, want := range []string{"default-src 'self'", "script-src 'self' 'sha256-", "connect-src 'self'", "frame-ancestors 'none'", "object-src 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "*"} {
		if strings.Contains(csp, bad) {
			t.Errorf("CSP %q allows %q", csp, bad)
		}
	}
}

// An index.html with a second inline script is refused at build: the
// policy allows only the import map's hash.
func TestAnInlineScriptBesideTheImportMapIsRefused(t *testing.T) {
	page := `<script type="importmap">{}</script><script type="module" src="/console/app.js"></script>`
	if _, err := newFrom(fstest.MapFS{"assets/index.html": {Data: []byte(page)}}); err != nil {
		t.Fatalf("a page with the import map: %v", err)
	}
	for name, bad := range map[string]string{
		"inline":       page + `<script>alert(1)</script>`,
		"no importmap": `<script type="module" src="/console/app.js"></script>`,
	} {
		if _, err := newFrom(fstest.MapFS{"assets/index.html": {Data: []byte(bad)}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := newFrom(fstest.MapFS{"assets/index.html": {Data: []byte(page)}, "assets/x.bin": {Data: []byte{0}}}); err == nil {
		t.Error("an asset of unknown type was accepted")
	}
}

// Nothing in the assets names another host: the console works offline.
func TestNoAssetLoadsFromAnotherHost(t *testing.T) {
	c := mustNew(t)
	for path, a := range c.files {
		if strings.HasPrefix(path, Prefix+"vendor/LICENSE") || path == "/" {
			continue
		}
		for _, bad := range []string{"http://", "https://", "//cdn", "fonts.googleapis"} {
			if i := bytes.Index(a.body, []byte(bad)); i >= 0 && !allowedURL(a.body[i:]) {
				t.Errorf("%s names another host: %q", path, a.body[i:min(len(a.body), i+60)])
			}
		}
	}
}

// allowedURL: an XML namespace is a name, never fetched.
func allowedURL(b []byte) bool {
	return bytes.HasPrefix(b, []byte("http://www.w3.org/"))
}

// The vendored files are the npm packages' own bytes: VENDOR.json names
// each one's package, version and path, and the browser test's
// node_modules (npm ci in e2e/, from its lock file) holds them. Without
// node_modules this skips, unless VIGIL_REQUIRE_TOOLS=1.
func TestVendoredFilesAreTheNpmPackages(t *testing.T) {
	b, err := os.ReadFile("assets/vendor/VENDOR.json")
	if err != nil {
		t.Fatal(err)
	}
	var files map[string]string
	if err := json.Unmarshal(b, &files); err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile("e2e/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	var lk struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	if err := json.Unmarshal(lock, &lk); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("e2e/node_modules"); err != nil {
		requireTools(t, "e2e/node_modules is absent (run npm ci in internal/console/e2e)")
	}
	entries, _ := os.ReadDir("assets/vendor")
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok && e.Name() != "VENDOR.json" {
			t.Errorf("assets/vendor/%s is not in VENDOR.json", e.Name())
		}
	}
	for name, src := range files {
		pkgAt, path, _ := strings.Cut(src, "/")
		pkg, version, _ := strings.Cut(pkgAt, "@")
		if got := lk.Packages["node_modules/"+pkg].Version; got != version {
			t.Errorf("%s: VENDOR.json says %s@%s, the lock file %s", name, pkg, version, got)
		}
		want, err := os.ReadFile(filepath.Join("e2e/node_modules", pkg, path))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := os.ReadFile(filepath.Join("assets/vendor", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("assets/vendor/%s differs from %s (%v)", name, src, err)
		}
	}
}

// requireTools skips, saying why, unless VIGIL_REQUIRE_TOOLS=1, under
// which it fails.
func requireTools(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("VIGIL_REQUIRE_TOOLS") == "1" {
		t.Fatal(why + " (VIGIL_REQUIRE_TOOLS=1)")
	}
	t.Skip(why)
}

var _ http.Handler = (*Console)(nil)

// HEAD answers the headers without the body; a weak or wildcard
// If-None-Match revalidates too; any other method is 405 naming GET and
// HEAD.
func TestHeadWeakETagsAndOtherMethods(t *testing.T) {
	c := mustNew(t)
	first := get(t, c, "/console/app.js", nil)
	req := httptest.NewRequest("HEAD", "/console/app.js", nil)
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != fmt.Sprint(first.Body.Len()) ||
		rec.Header().Get("ETag") != first.Header().Get("ETag") {
		t.Errorf("HEAD: %d, %d bytes, headers %v", rec.Code, rec.Body.Len(), rec.Header())
	}
	for _, inm := range []string{"W/" + first.Header().Get("ETag"), "*", `"stale", ` + first.Header().Get("ETag")} {
		if rec := get(t, c, "/console/app.js", map[string]string{"If-None-Match": inm}); rec.Code != 304 || rec.Body.Len() != 0 {
			t.Errorf("If-None-Match %s: %d, %d bytes", inm, rec.Code, rec.Body.Len())
		}
	}
	rec = httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
