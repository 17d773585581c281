package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Prefix is where the assets are served; the page itself is at /.
const Prefix = "/console/"

type asset struct {
	body        []byte
	etag        string
	contentType string
}

// Console serves the page and its assets. It is immutable once built.
type Console struct {
	files map[string]asset // by the path served: "/" and Prefix + name
	csp   string
}

var importMap = regexp.MustCompile(`(?s)<script type="importmap">(.*?)</script>`)

// New reads the embedded assets.
func New() (*Console, error) { return newFrom(assets) }

func newFrom(fsys fs.FS) (*Console, error) {
	sub, err := fs.Sub(fsys, "assets")
	if err != nil {
		return nil, err
	}
	c := &Console{files: map[string]asset{}}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		ct, err := contentType(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		a := asset{body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: ct}
		c.files[Prefix+p] = a
		if p == "index.html" {
			c.files["/"] = a
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	index, ok := c.files["/"]
	if !ok {
		return nil, fmt.Errorf("console: no index.html among the assets")
	}
	// The import map is the page's one inline script: allowed by its hash,
	// so script-src stays 'self'.
	scripts := [][]byte{}
	for _, m := range importMap.FindAllSubmatch(index.body, -1) {
		scripts = append(scripts, m[1])
	}
	if len(scripts) != 1 || bytes.Count(index.body, []byte("<script")) != len(scripts)+1 {
		return nil, fmt.Errorf("console: index.html must hold one inline import map and one module script, found %d import maps", len(scripts))
	}
	sum := sha256.Sum256(scripts[0])
	c.csp = strings.Join([]string{
		"default-src 'self'",
		"script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		"style-src 'self'",
		"img-src 'self' data:",
		"connect-src 'self'",
		"font-src 'self'",
		"object-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
		"frame-ancestors 'none'",
	}, "; ")
	return c, nil
}

// contentType is an asset's type by its extension; an asset of a type
// the console does not know is a build error, never a guess.
func contentType(p string) (string, error) {
	switch ext := path.Ext(p); ext {
	case ".html":
		return "text/html; charset=utf-8", nil
	case ".js":
		return "text/javascript; charset=utf-8", nil
	case ".css":
		return "text/css; charset=utf-8", nil
	case ".json":
		return "application/json", nil
	case ".svg":
		return "image/svg+xml", nil
	case ".png":
		return "image/png", nil
	case "":
		if strings.HasPrefix(path.Base(p), "LICENSE") {
			return "text/plain; charset=utf-8", nil
		}
	}
	return "", fmt.Errorf("console: no content type for %s", p)
}

// Serves reports whether p is the page or one of its assets.
func (c *Console) Serves(p string) bool {
	_, ok := c.files[p]
	return ok
}

// CSP is the Content-Security-Policy every answer carries.
func (c *Console) CSP() string { return c.csp }

// ServeHTTP answers GET and HEAD of the page and its assets, 304 to a
// request whose If-None-Match holds the asset's ETag.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", c.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	a, ok := c.files[r.URL.Path]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("ETag", a.etag)
	// Revalidated on every load: an upgraded host serves its new assets
	// at once, and an unchanged one answers 304 without a body.
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", a.contentType)
	// ServeContent answers HEAD, Range and a 304 to an If-None-Match
	// holding the ETag (weak or strong, or *).
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}
