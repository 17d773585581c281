package webhooks_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
)

// A recipient verifies each POST before it trusts the body: the raw body
// bytes as received, the request's headers, the secret it registered, and
// its own clock.
func ExampleVerify() {
	const secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
	body := []byte(`{"seq":1,"id":"01jdx3m5z8a8w0q6v4f1r2n3p4","watch_id":"01jdx3kqv0d3f7m2a9c8e6b4t1","kind":"timer","type":"fired","outcome":{"result":"fired","summary":"reached 2026-01-01T00:00:00Z","detail":{"at":"2026-01-01T00:00:00Z"}},"at":"2026-01-01T00:00:01Z"}`)

	// What vigil sent (in a handler: r.Header, and io.ReadAll(r.Body)).
	h := http.Header{}
	h.Set("webhook-id", "01jdx3m5z8a8w0q6v4f1r2n3p4")
	h.Set("webhook-timestamp", "1767225601")
	h.Set("webhook-signature", "v1,+aNyJsAHrvQfhWg6mQTD13UXz1qQ0g4kS2vFMZfXFUY=")

	now := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC) // in a handler: time.Now()
	fmt.Println(webhooks.Verify(secret, h, body, now, 0))

	body[len(body)-3] = '2' // "at" altered in transit
	err := webhooks.Verify(secret, h, body, now, 0)
	fmt.Println(errors.Is(err, webhooks.ErrSignature))

	late := now.Add(time.Hour)
	err = webhooks.Verify(secret, h, body, late, 0)
	fmt.Println(errors.Is(err, webhooks.ErrTimestamp))
	// Output:
	// <nil>
	// true
	// true
}

func ExampleHeaders() {
	h, err := webhooks.Headers("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX",
		"01jdx3m5z8a8w0q6v4f1r2n3p4", time.Unix(1767225601, 0), []byte(`{}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Get("webhook-id"))
	fmt.Println(h.Get("webhook-timestamp"))
	fmt.Println(h.Get("webhook-signature"))
	// Output:
	// 01jdx3m5z8a8w0q6v4f1r2n3p4
	// 1767225601
	// v1,GfOECIsYyGeHkg+AvHXgJEi6J6P4YzCBHdCQ3jqgAfs=
}
