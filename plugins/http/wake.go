package main

import (
	"net/url"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// changeEvent is a Standard Webhooks event saying a URL changed: its body
// names the URL at the top ({"url": …}) or in the payload's data, as the
// Standard Webhooks payload structure puts it ({"type": …, "data":
// {"url": …}}).
type changeEvent struct {
	URL  string `json:"url"`
	Data struct {
		URL string `json:"url"`
	} `json:"data"`
}

// wake names the URL a Standard Webhooks event says changed, normalized
// exactly as admit keys a watch on it (partitionKey): a generic "this
// changed, look now". Only from a standard source, only a URL admit would
// take (absolute http or https, a host, no credentials); anything else
// names none.
func wake(e sdk.Event) ([]string, error) {
	var ev changeEvent
	if e.Source != abi.SourceStandard || !e.DecodeBody(&ev) {
		return nil, nil
	}
	var keys []string
	for _, raw := range []string{ev.URL, ev.Data.URL} {
		if u, err := url.Parse(raw); raw == "" || err != nil || !u.IsAbs() || u.Hostname() == "" ||
			(u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			continue
		}
		if k := partitionKey(Params{URL: raw}); k != "" {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
