package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ParamsUnmarshaler is implemented by a params type that decodes itself.
// Admit and observe then skip encoding/json for params, which inside a
// plugin costs tens of microseconds per call (see the package's codec
// notes). The json tags remain the contract: UnmarshalParams must accept
// exactly what they accept and refuse an unknown key with
// ErrUnknownField, and a test should hold it to that (the timer's
// TestUnmarshalParamsAgrees). Implement it with DecodeFields, only for a
// kind whose calls are hot.
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

// Strings decodes a JSON array of strings (null is an empty list).
func (v Value) Strings() ([]string, error) {
	if v.IsNull() {
		return nil, nil
	}
	d := decoder{b: v.raw}
	if !d.eat('[') {
		return nil, fmt.Errorf("want an array of strings, got %.40s", v.raw)
	}
	var out []string
	d.ws()
	if d.eat(']') {
		return out, nil
	}
	for {
		d.ws()
		s, ok := d.str()
		if !ok {
			return nil, fmt.Errorf("want an array of strings, got %.40s", v.raw)
		}
		out = append(out, s)
		d.ws()
		if d.eat(']') {
			return out, nil
		}
		if !d.eat(',') {
			return nil, fmt.Errorf("want an array of strings, got %.40s", v.raw)
		}
	}
}

// Decode decodes the value with encoding/json, for nested shapes.
func (v Value) Decode(dst any) error { return json.Unmarshal(v.raw, dst) }

// FieldError is DecodeFields' error when its callback refused a key's
// value: Key names the field, Err says why.
type FieldError struct {
	Key string
	Err error
}

func (e *FieldError) Error() string { return e.Key + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// ErrUnknownField is the error a ParamsUnmarshaler returns from its
// DecodeFields callback for a key the params do not have; admit reports
// it as invalid_params naming the key, as encoding/json would.
var ErrUnknownField = errors.New("unknown field")

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
			return &FieldError{Key: key, Err: err}
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
