//go:build !linux

package scheduler

import (
	"errors"
	"time"
)

// The benchmarks that need these skip themselves: they read Linux's /proc.
const osMetrics = false

func cpuTime() time.Duration                 { return 0 }
func residentBytes() (rss, file int64)       { return -1, -1 }
func peakResident() int64                    { return -1 }
func contextSwitches() int64                 { return 0 }
func evictPageCache(string) error            { return errors.New("not on this OS") }
func diskUsage(string) (int64, int64, error) { return 0, 0, errors.New("not on this OS") }
