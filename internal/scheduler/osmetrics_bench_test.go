//go:build linux

package scheduler

// What the benchmarks in bench_test.go read from Linux: the process's CPU
// time, resident memory, thread wake-ups, and a data directory's size, and
// how they drop a store's files from the page cache.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const osMetrics = true

// cpuTime is the CPU the process has used, user plus system, all threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// residentBytes is the process's resident set and the file-backed part of
// it (mapped files, such as badger's tables and logs), from
// /proc/self/statm.
func residentBytes() (rss, file int64) {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1, -1
	}
	f := strings.Fields(string(raw))
	page := int64(os.Getpagesize())
	res, _ := strconv.ParseInt(f[1], 10, 64)
	shared, _ := strconv.ParseInt(f[2], 10, 64)
	return res * page, shared * page
}

// peakResident is the process's high-water resident set (VmHWM).
func peakResident() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// contextSwitches sums the voluntary and involuntary context switches of
// every thread of the process: each time a thread went to sleep and woke,
// or was preempted. An idle process that nothing wakes adds none.
func contextSwitches() int64 {
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	var n int64
	for _, p := range tasks {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited
		}
		for _, line := range strings.Split(string(raw), "\n") {
			for _, k := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					n += c
				}
			}
		}
	}
	return n
}

// diskUsage is the size of the files under dir: their apparent size, and
// the blocks allocated to them (badger preallocates and leaves holes).
func diskUsage(dir string) (apparent, allocated int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		apparent += info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			allocated += st.Blocks * 512
		}
		return nil
	})
	return apparent, allocated, err
}

// evictPageCache drops dir's files from the page cache
// (posix_fadvise DONTNEED), so the next open reads them from the disk, as
// after a reboot. It only works for clean pages: the store must be closed.
func evictPageCache(dir string) error {
	return filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := f.Sync(); err != nil {
			return err
		}
		const fadvDontNeed = 4
		_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
		if errno != 0 {
			return errno
		}
		return nil
	})
}
