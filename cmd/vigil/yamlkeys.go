package main

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// decodeConfig decodes a config file into s strictly, and names the key at
// fault from the document's structure, never from an error's text: a key
// the settings do not have is found by walking the document beside the
// settings' types; a value that does not decode is found by decoding each
// top-level key on its own. An empty document is an empty config.
func decodeConfig(data []byte, s *settings) (key string, err error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "config", err // not YAML: no key to name
	}
	if len(doc.Content) == 0 {
		return "", nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return "config", fmt.Errorf("line %d: want a mapping of settings", root.Line)
	}
	if path, line, ok := unknownKey(root, reflect.TypeFor[settings]()); ok {
		return path[len(path)-1], fmt.Errorf("line %d: unknown key %s", line, strings.Join(path, "."))
	}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i+1 < len(root.Content); i += 2 {
		name := root.Content[i].Value
		f, ok := fieldByTag(v, name)
		if !ok {
			continue // unknownKey would have said
		}
		if err := root.Content[i+1].Decode(f.Addr().Interface()); err != nil {
			return name, err
		}
	}
	return "", nil
}

var unmarshaler = reflect.TypeFor[yaml.Unmarshaler]()

// unknownKey walks n beside t and returns the path to the first mapping
// key t has no field for, with its line.
func unknownKey(n *yaml.Node, t reflect.Type) (path []string, line int, ok bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil, 0, false // it reads its own node
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			f, found := structFieldByTag(t, k.Value)
			if !found {
				return []string{keyName(k)}, k.Line, true
			}
			if p, l, ok := unknownKey(n.Content[i+1], f.Type); ok {
				return append([]string{k.Value}, p...), l, true
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if p, l, ok := unknownKey(n.Content[i+1], t.Elem()); ok {
				return append([]string{n.Content[i].Value}, p...), l, true
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if p, l, ok := unknownKey(c, t.Elem()); ok {
				return append([]string{fmt.Sprintf("[%d]", i)}, p...), l, true
			}
		}
	}
	return nil, 0, false
}

// keyName is how an error names mapping key k: its text, or, for a key
// that has none (an empty or null scalar, a sequence or a mapping used as
// a key), what it is.
func keyName(k *yaml.Node) string {
	switch {
	case k.Kind != yaml.ScalarNode:
		return "(a non-scalar key)"
	case k.Value == "":
		return `""`
	}
	return k.Value
}

// yamlName is the key that names f in a document, or "" for a field
// yaml does not read.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch tag {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return tag
}

// yamlKeys is every key of struct type t.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if k := yamlName(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// structFieldByTag is t's field whose yaml name is name.
func structFieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); name != "" && yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldByTag is v's field whose yaml name is name.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	f, ok := structFieldByTag(v.Type(), name)
	if !ok {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(f.Index), true
}
