package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/vigilhq/vigil/api"
)

// SignalsPath is where a signal's capability URL lives; its token follows.
const SignalsPath = "/api/v1/signals/"

// SignalURL checks that s is a signal's capability URL (an http or https
// URL whose path is /api/v1/signals/{token}) and answers it parsed.
func SignalURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %q is not a signal's URL: want http(s)://HOST%s{token}", s, SignalsPath)
	}
	tok, ok := strings.CutPrefix(u.EscapedPath(), SignalsPath)
	if !ok || tok == "" || strings.Contains(tok, "/") {
		return nil, fmt.Errorf("client: %q is not a signal's URL: want http(s)://HOST%s{token}", u.Redacted(), SignalsPath)
	}
	return u, nil
}

// SendSignal answers the signal at signalURL, a registration's
// signal_url, which may be on another host than the client's. It sends no
// bearer token, the client's or any: the URL is the capability. A signal
// already settled is an *api.Error of api.CodeAlreadySettled, with the
// signal as it settled (the first answer's outcome) beside it.
func (c *Client) SendSignal(ctx context.Context, signalURL string, req api.SignalRequest) (api.Signal, error) {
	u, err := SignalURL(signalURL)
	if err != nil {
		return api.Signal{}, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return api.Signal{}, fmt.Errorf("%w: encoding its body: %w", errRequest, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(b))
	if err != nil {
		return api.Signal{}, fmt.Errorf("%w: %w", errRequest, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(hr)
	if err != nil {
		return api.Signal{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var out api.Signal
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return api.Signal{}, fmt.Errorf("client: POST the signal: decoding the response: %w", err)
		}
		return out, nil
	case http.StatusConflict:
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		var sc api.SignalConflict
		if err == nil && json.Unmarshal(body, &sc) == nil && sc.Error.Code != "" {
			return sc.Signal, &sc.Error
		}
		return api.Signal{}, responseError(&http.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body))})
	}
	return api.Signal{}, responseError(resp)
}
