// Command example is a small predicate plugin written with vigil's Go SDK,
// meant to be read and copied: kind example.http-status settles "matched"
// once a GET of params.url answers params.status (default 200).
//
// It shows the parts every plugin has: a params struct with its JSON
// Schema, an admit that checks configuration only (the params, and the
// hosts the operator granted), and an observe that fetches through the
// host and answers Pending whenever it cannot tell.
//
// Build:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -buildvcs=false -o example.wasm .
//
// Install: put example.wasm in the plugin directory with this entry in its
// registry.json:
//
//	{"kinds": {"example.http-status": {
//	  "wasm": "example.wasm",
//	  "capabilities": ["fetch"],
//	  "fetch_hosts": ["status.example.com"]
//	}}}
//
// It must never be a dependency of anything: it is documentation that
// compiles, tested like a real plugin, and not bundled with the host.
//
// Rejected: an example inside the host's module, which an author could not
// copy out and build without the host's go.mod.
package main
