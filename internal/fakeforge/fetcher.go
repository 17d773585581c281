package fakeforge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

// TestToken is the value Fetcher attaches for the secret named "gh".
const TestToken = "test-token"

// Fetcher performs a plugin's fetch with net/http, for a plugin's native
// tests: the part of the host's issuer a predicate can observe (a status
// and a body, or a failure with a reason), and none of the rest.
//
// It refuses what the issuer refuses before sending (a method other than
// GET or HEAD, a header name that is not a lower-case token, a value
// outside printable ASCII, a secret it does not hold) as
// invalid_request_options or not_granted, adds a named secret as
// "authorization: Bearer …", maps a timeout to timeout and any other
// failure to connect_failed, and fingerprints the body (hex SHA-256).
type Fetcher struct {
	// Secrets maps a secret's name to its value; nil holds one, "gh",
	// whose value is TestToken.
	Secrets map[string]string
	// MaxTimeout caps a request's timeout_seconds (default 5 s), so a test
	// of a hanging forge waits this long at most, never the plugin's 4 s.
	MaxTimeout time.Duration
}

var _ sdk.Fetcher = Fetcher{}

// Fetch performs req.
func (f Fetcher) Fetch(req sdk.FetchRequest) (sdk.FetchResponse, error) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		return failure(abi.FetchInvalidRequestOptions, "method "+req.Method+": only GET and HEAD"), nil
	}
	hreq, err := http.NewRequest(req.Method, req.URL, nil)
	if err != nil {
		return failure(abi.FetchInvalidRequestOptions, err.Error()), nil
	}
	for name, value := range req.Headers {
		if !lowerToken(name) {
			return failure(abi.FetchInvalidRequestOptions, "header name "+name+" is not a lower-case token"), nil
		}
		if !printable(value) {
			return failure(abi.FetchInvalidRequestOptions, "header "+name+" has a value outside printable ASCII"), nil
		}
		hreq.Header.Set(name, value)
	}
	if req.Secret != "" {
		secrets := f.Secrets
		if secrets == nil {
			secrets = map[string]string{"gh": TestToken}
		}
		v, ok := secrets[req.Secret]
		if !ok {
			return failure(abi.FetchNotGranted, "secret "+req.Secret+" is not held"), nil
		}
		hreq.Header.Set("Authorization", "Bearer "+v)
	}
	timeout := 5 * time.Second
	if req.TimeoutSeconds > 0 {
		timeout = time.Duration(req.TimeoutSeconds * float64(time.Second))
	}
	if f.MaxTimeout > 0 {
		timeout = min(timeout, f.MaxTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(hreq.WithContext(ctx))
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return failure(abi.FetchTimeout, err.Error()), nil
		}
		return failure(abi.FetchConnectFailed, err.Error()), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return failure(abi.FetchConnectFailed, err.Error()), nil
	}
	headers := map[string]string{}
	for name, values := range resp.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	sum := sha256.Sum256(body)
	return sdk.FetchResponse{
		Status:      resp.StatusCode,
		Headers:     headers,
		Body:        body,
		Fingerprint: hex.EncodeToString(sum[:]),
	}, nil
}

func failure(reason, msg string) sdk.FetchResponse {
	return sdk.FetchResponse{Failure: &abi.FetchFailure{Reason: reason, Message: msg}}
}

// lowerToken reports whether s is an RFC 9110 token with no upper-case
// letter.
func lowerToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
