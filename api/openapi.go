package api

import _ "embed"

//go:embed openapi.yaml
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the REST API (openapi.yaml),
// as served at GET /api/v1/openapi.yaml. The caller gets its own copy.
func OpenAPI() []byte {
	return append([]byte(nil), openAPI...)
}
