package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ParamsUnmarshaler is implemented by a params type that decodes itself.
// Observe then skips encoding/json for params, which inside a plugin costs
// tens of microseconds per call (see the package's codec notes); admit
// still decodes strictly with encoding/json, so the json tags remain the
// contract and UnmarshalParams must agree with them. Implement it only for
// a kind whose observe is hot, with DecodeFields.
type ParamsUnmarshaler interface {
	UnmarshalParams(data []byte) error
}

// Value is one JSON value inside an object being decoded by DecodeFields.
// Its bytes are already validated as JSON.
type Value struct{ raw []byte }

// Raw returns the value's JSON.
func (v Value) Raw() json.RawMessage { return v.raw }

// IsNull reports whether the value is null.
func (v Value) IsNull() bool { return string(v.raw) == "null" }

// String decodes a JSON string.
func (v Value) String() (string, error) {
	d := decoder{b: v.raw}
	s, ok := d.str()
	if !ok || d.i != len(d.b) {
		return "", fmt.Errorf("want a string, got %.40s", v.raw)
	}
	return s, nil
}

// Time decodes an RFC 3339 time string, exactly as encoding/json decodes
// a time.Time.
func (v Value) Time() (time.Time, error) {
	var t time.Time
	err := t.UnmarshalJSON(v.raw)
	return t, err
}

// Int decodes a JSON integer.
func (v Value) Int() (int64, error) {
	n, err := strconv.ParseInt(string(v.raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %.40s", v.raw)
	}
	return n, nil
}

// Float decodes a JSON number.
func (v Value) Float() (float64, error) {
	d := decoder{b: v.raw}
	if !d.number() || d.i != len(d.b) {
		return 0, fmt.Errorf("want a number, got %.40s", v.raw)
	}
	return strconv.ParseFloat(string(v.raw), 64)
}

// Bool decodes true or false.
func (v Value) Bool() (bool, error) {
	switch string(v.raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %.40s", v.raw)
}

// Decode decodes the value with encoding/json, for nested shapes.
func (v Value) Decode(dst any) error { return json.Unmarshal(v.raw, dst) }

// ErrDuplicateKey is DecodeFields' error for an object that names a key
// twice.
var ErrDuplicateKey = errors.New("key given twice")

// DecodeFields decodes a JSON object in one pass, calling f with each key
// and its value, in order. A key given twice is an error (ErrDuplicateKey);
// what an unknown key means is f's decision. It is the decoder the SDK
// uses for the observe envelope, offered for ParamsUnmarshaler.
func DecodeFields(data []byte, f func(key string, v Value) error) error {
	d := decoder{b: data}
	d.ws()
	if !d.eat('{') {
		return d.fail("want an object")
	}
	d.ws()
	if d.eat('}') {
		return d.end()
	}
	var seen []string
	for {
		d.ws()
		key, ok := d.str()
		if !ok {
			return d.fail("want a key")
		}
		for _, k := range seen {
			if k == key {
				return fmt.Errorf("%q: %w", key, ErrDuplicateKey)
			}
		}
		seen = append(seen, key)
		d.ws()
		if !d.eat(':') {
			return d.fail("want ':'")
		}
		d.ws()
		raw, ok := d.raw()
		if !ok {
			return d.fail("bad value for " + strconv.Quote(key))
		}
		if err := f(key, Value{raw}); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		d.ws()
		if d.eat('}') {
			return d.end()
		}
		if !d.eat(',') {
			return d.fail("want ',' or '}'")
		}
	}
}

func (d *decoder) end() error {
	d.ws()
	if d.i != len(d.b) {
		return d.fail("trailing data")
	}
	return nil
}
