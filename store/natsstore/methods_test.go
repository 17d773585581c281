package natsstore

import (
	"reflect"
	"testing"

	"github.com/vigilhq/vigil/store"
)

// TestMethodSetMatchesBadger: every exported method of *store.Badger
// exists here with the same signature, so whatever interface the core
// cuts from badger's methods this backend satisfies too.
func TestMethodSetMatchesBadger(t *testing.T) {
	bt, nt := reflect.TypeFor[*store.Badger](), reflect.TypeFor[*Store]()
	for i := range bt.NumMethod() {
		bm := bt.Method(i)
		nm, ok := nt.MethodByName(bm.Name)
		if !ok {
			t.Errorf("missing %s%s", bm.Name, bm.Type.String()[len("func(*store.Badger"):])
			continue
		}
		// Compare without the receiver.
		if !sameSignature(bm.Type, nm.Type) {
			t.Errorf("%s: %s here, %s on badger", bm.Name, nm.Type, bm.Type)
		}
	}
}

func sameSignature(a, b reflect.Type) bool {
	if a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() || a.IsVariadic() != b.IsVariadic() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}
