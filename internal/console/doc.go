// Package console is the operator's web console: a page and its ES
// modules, embedded in the binary with go:embed and served by the API's
// server at / and /console/ (internal/httpapi mounts it; it never answers
// under /api/, /metrics or /healthz). Everything it shows and does goes
// through the REST API with the operator's bearer token, which the page
// keeps in sessionStorage and sends in the Authorization header only.
//
// It owns the assets, their content types, their caching (a strong ETag
// per file, the SHA-256 of its bytes, revalidated on every load) and the
// Content-Security-Policy: self only, with the one inline script (the
// import map that names the vendored modules) allowed by its hash. It
// must never load anything from another host (no CDN, no web fonts: the
// console works offline), never put a token in a URL, and never need a
// build step before `go run ./cmd/vigil serve`.
//
// The rendering library is Preact with htm (tagged templates instead of
// JSX), vendored as their published npm dist files (assets/vendor,
// VENDOR.json names each file's package, version and path; a test checks
// the bytes against the npm package installed for the browser test).
// Rejected alternatives: a bundler and a framework's build (a generated
// file to keep fresh, and a build step for anyone who changes a line);
// DOM code by hand (a second, worse rendering library); a CDN (the
// console must work offline, and a CSP of self only forbids it).
package console
