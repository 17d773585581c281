package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// splitPath splits a dotted path into its segments.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errors.New("an empty path")
	}
	segs := strings.Split(path, ".")
	for i, s := range segs {
		if s == "" {
			return nil, fmt.Errorf("segment %d of %q is empty", i+1, path)
		}
	}
	return segs, nil
}

// decodeJSON decodes one JSON value, keeping numbers as written so that
// equal compares them exactly.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// lookup walks segs into v: a segment names an object's key, or, on an
// array, a decimal index from 0.
func lookup(v any, segs []string) (any, bool) {
	for _, s := range segs {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[s]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != s {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// equal compares two decoded JSON values by value: numbers by their
// exact decimal value (1, 1.0 and 1e0 are equal), objects whatever their
// key order.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		return normalNumber(x) == normalNumber(y)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	default: // string, bool, nil
		return a == b
	}
}

// decimal is a JSON number reduced to sign, significant digits and a
// power of ten, so that equal values have equal forms.
type decimal struct {
	neg    bool
	digits string // no leading or trailing zeros; "" is zero
	exp    int64
	raw    string // set when the exponent does not fit: compared as written
}

// normalNumber reduces n without expanding its exponent: a body holding
// 1e999999999 must cost what 1 costs, which is why this is not math/big.
func normalNumber(n json.Number) decimal {
	s := string(n)
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || e > 1<<40 || e < -(1<<40) {
			return decimal{raw: string(n)}
		}
		d.exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	d.exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	d.exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	if d.digits == "" {
		return decimal{} // zero, whatever its sign or exponent
	}
	return d
}
