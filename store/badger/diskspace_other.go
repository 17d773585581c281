//go:build !linux

package badger

import (
	"errors"
	"runtime"
)

// noProbe cannot measure: on this platform the store does not hold
// writes to the disk's free space (the guard says so once, in the log).
type noProbe struct{}

var errNoProbe = errors.New("badger: free space is measured on linux only, not on " + runtime.GOOS)

func (noProbe) Free(string) (int64, error)      { return 0, errNoProbe }
func (noProbe) Allocated(string) (int64, error) { return 0, errNoProbe }

// realProbe is the platform's fsProbe.
func realProbe() fsProbe { return noProbe{} }
