package sdk

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Event is one inbound event the host verified and hands to a plugin's
// Wake: a signed forge webhook or a Standard Webhooks POST.
type Event struct {
	// Name is the event's name as its source gives it: GitHub's
	// X-GitHub-Event or Gitea's X-Gitea-Event ("check_suite",
	// "workflow_run", "issues"), a Standard Webhooks payload's type; it
	// may be empty.
	Name string
	// Source is the scheme of the hook source it came through:
	// abi.SourceGitHub, abi.SourceGitea or abi.SourceStandard.
	Source string
	// Body is the event's JSON body as the source sent it; nil when the
	// host passed none. Nothing in it is trusted beyond its signature.
	Body json.RawMessage
}

// DecodeBody decodes the body into v with encoding/json (unknown fields
// ignored: a forge's payload carries far more than a plugin reads). It
// reports false for a body that is absent, null or not what v can hold:
// such an event concerns no watch, and a Wake answers no keys for it.
func (e Event) DecodeBody(v any) bool {
	if len(e.Body) == 0 || string(e.Body) == "null" {
		return false
	}
	return json.Unmarshal(e.Body, v) == nil
}

// wake runs the plugin's Wake and holds its keys to the contract. An
// input the SDK cannot read concerns no watch: it answers no keys, never
// an error, since junk is what a hostile sender tries first and a wake is
// only a hint. The author's error, a panic, or keys off the contract are
// errors: the host counts them as the plugin's fault and wakes nothing.
func (t *typed[P]) wake(in []byte) ([]byte, error) {
	if t.p.Wake == nil {
		return nil, errors.New("sdk: the plugin sets no Wake: the wake export answers nothing")
	}
	req, err := decodeWakeRequest(in)
	if err != nil {
		return appendWakeResponse(nil, nil), nil
	}
	var keys []string
	err = guard(func() error {
		var err error
		keys, err = t.p.Wake(Event{Name: req.Event, Source: req.Source, Body: req.Body})
		return err
	})
	if err != nil {
		return nil, err
	}
	keys, err = checkWakeKeys(keys)
	if err != nil {
		return nil, err
	}
	return appendWakeResponse(make([]byte, 0, 64+64*len(keys)), keys), nil
}

// checkWakeKeys holds Wake's answer to the contract, dropping repeats
// (the first of each stays, so the order is the author's): each key 1 to
// abi.MaxPartitionKey bytes, at most abi.MaxWakeKeys of them.
func checkWakeKeys(keys []string) ([]string, error) {
	out := keys[:0:0]
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		switch {
		case k == "":
			return nil, fmt.Errorf("sdk: Wake's key %d is empty: a key names a watch's resource, as PartitionKey answers it", i)
		case len(k) > abi.MaxPartitionKey:
			return nil, fmt.Errorf("sdk: Wake's key %d is %d bytes, at most %d: answer the digest PartitionKey answers for a longer one", i, len(k), abi.MaxPartitionKey)
		case seen[k]:
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	if len(out) > abi.MaxWakeKeys {
		return nil, fmt.Errorf("sdk: Wake answered %d keys, at most %d: one event concerns a handful of resources", len(out), abi.MaxWakeKeys)
	}
	return out, nil
}
