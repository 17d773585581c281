package schema

import (
	"embed"
	"io/fs"
)

//go:embed *.json
var files embed.FS

// Files maps each message ("describe", "observe.response", "wake.request",
// "vigil_fetch.request", …) to its schema's file name in FS, in a map of
// the caller's own.
func Files() map[string]string {
	return map[string]string{
		"describe":                         "describe.json",
		"admit.request":                    "admit-request.json",
		"admit.response":                   "admit-response.json",
		"observe.request":                  "observe-request.json",
		"observe.response":                 "observe-response.json",
		"vigil_fetch.request":              "fetch-request.json",
		"vigil_fetch.response":             "fetch-response.json",
		"vigil_extraction_failed.request":  "extraction-failed-request.json",
		"vigil_extraction_failed.response": "extraction-failed-response.json",
		"vigil_exec.request":               "exec-request.json",
		"vigil_exec.response":              "exec-response.json",
		"wake.request":                     "wake-request.json",
		"wake.response":                    "wake-response.json",
	}
}

// FS is the schema files, at the root.
func FS() fs.FS { return files }
