// Command wakejunk is broken one way: its wake raises an error for a body
// that is not a JSON object, where it must answer no keys, so a junk
// event costs an error on the host's books for nothing. Target:
// wake.no-fault-on-junk.
package main

import (
	"bytes"
	"errors"

	"github.com/vigilhq/vigil/conformance/testdata/base"
	"github.com/vigilhq/vigil/sdk"
	_ "github.com/vigilhq/vigil/sdk/wake"
)

func init() {
	p := base.Plugin("broken.wakejunk", false)
	p.Wake = func(e sdk.Event) ([]string, error) {
		if !bytes.HasPrefix(bytes.TrimSpace(e.Body), []byte("{")) {
			return nil, errors.New("the body is not an object") // the bug
		}
		return base.Wake(e)
	}
	sdk.Register(p)
}

func main() {}
