package abi

import (
	"bytes"
	"encoding/json"
	"errors"
)

// StrictUnmarshal decodes one JSON value into v, refusing unknown fields
// and trailing data. Both sides use it where the contract is the caller's
// word (params, outputs): a misspelt field must be refused, not dropped.
// Empty input decodes as null.
func StrictUnmarshal(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("null")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
