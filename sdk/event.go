package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

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

// DecodeBody decodes the body into v as encoding/json does (unknown
// fields ignored: a forge's payload carries far more than a plugin
// reads). It reports false for a body that is absent, null or not what v
// can hold: such an event concerns no watch, and a Wake answers no keys
// for it.
//
// When v points to a struct, the body is scanned once with the SDK's own
// decoder and only the top-level members the struct names (by their json
// tags, matched without regard to case as encoding/json matches them)
// are handed to encoding/json: a body of a megabyte costs one scan, not
// encoding/json's several, inside wake's one-second bound. The scan is
// stricter than encoding/json on junk: a body whose top-level object
// repeats a key, or that nests deeper than the SDK's decoder reads
// (128), reads as one v cannot hold.
func (e Event) DecodeBody(v any) bool {
	if len(e.Body) == 0 || string(e.Body) == "null" {
		return false
	}
	names := memberNames(v)
	if names == nil {
		return json.Unmarshal(e.Body, v) == nil
	}
	sub := append(make([]byte, 0, 512), '{')
	err := DecodeFields(e.Body, func(key string, val Value) error {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, key) }) {
			return nil
		}
		if len(sub) > 1 {
			sub = append(sub, ',')
		}
		sub = append(appendString(sub, key), ':')
		sub = append(sub, val.Raw()...)
		return nil
	})
	if err != nil {
		return false
	}
	return json.Unmarshal(append(sub, '}'), v) == nil
}

// memberNames lists the JSON member names a struct v points to decodes
// (its embedded structs' included), or nil when v is not a pointer to a
// struct.
func memberNames(v any) []string {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	return appendMemberNames(make([]string, 0, t.Elem().NumField()), t.Elem())
}

func appendMemberNames(out []string, t reflect.Type) []string {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = appendMemberNames(out, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
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
