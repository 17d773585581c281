// Command fetcher is a test plugin that needs the fetch capability: it
// fetches params.url and settles with the status, or answers pending when
// the fetch fails; a body of "unextractable" it reports to the host as a
// failed extraction.
package main

import (
	"fmt"
	"time"

	"github.com/vigilhq/vigil/sdk"
)

type Params struct {
	URL string `json:"url"`
	// ReportOnly reports a failed extraction without fetching first.
	ReportOnly bool `json:"report_only,omitempty"`
}

func main() {}

func init() {
	sdk.Register(sdk.Plugin[Params]{
		Kind: "test.fetcher", Version: "1.0.0", DefaultEvery: time.Second,
		Schema:       `{"type":"object","properties":{"url":{"type":"string","minLength":1},"report_only":{"type":"boolean"}},"required":["url"],"additionalProperties":false}`,
		Capabilities: []string{"fetch"},
		Observe: func(p Params, in sdk.Input) (sdk.Result, error) {
			req := sdk.FetchRequest{Method: "GET", URL: p.URL}
			if p.ReportOnly {
				forgot, err := in.ExtractionFailed(req, sdk.FetchResponse{Fingerprint: "fp-0"})
				return sdk.Pending(fmt.Sprintf("extraction failed: forgot %v, err %v", forgot, err)), nil
			}
			resp, err := in.Fetch(req)
			if err != nil {
				return sdk.Pending(err.Error()), nil
			}
			if string(resp.Body) == "unextractable" {
				forgot, err := in.ExtractionFailed(req, resp)
				return sdk.Pending(fmt.Sprintf("extraction failed: forgot %v, err %v", forgot, err)), nil
			}
			return sdk.Settled(sdk.Outcome{Result: fmt.Sprint(resp.Status), Summary: string(resp.Body)}), nil
		},
	})
}
