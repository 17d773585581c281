package badger

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TrimMapped advises the kernel to reclaim the resident pages of the
// store's table files, when the process's resident file-backed memory
// (RssFile) is over budget: one read of /proc/self/status, and only past
// the budget a read of /proc/self/smaps and one madvise(MADV_PAGEOUT) per
// table mapping that holds resident pages. The pages are the kernel's
// page cache, clean once a table is written (badger syncs each table it
// builds): reclaiming them loses nothing, and a later read maps them
// again. MADV_PAGEOUT, not MADV_DONTNEED: a table can be unmapped (a
// compaction deleted it) between the listing and the advice, and its
// range reused by another mapping; PAGEOUT never changes what any
// mapping reads, so advice that lands on a stranger's range costs that
// mapping a fault, never its contents.
func (s *KV) TrimMapped(budget int64) (MappedTrim, error) {
	var t MappedTrim
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return t, fmt.Errorf("%w: %w", ErrTrimUnsupported, err)
	}
	rf, ok, err := statusField(f, "RssFile")
	_ = f.Close()
	if err != nil || !ok {
		return t, fmt.Errorf("%w: /proc/self/status has no RssFile (%v)", ErrTrimUnsupported, err)
	}
	t.FileResident = rf
	if rf <= budget {
		return t, nil
	}
	maps, err := s.tableMappings()
	if err != nil {
		return t, err
	}
	for _, m := range maps {
		t.Tables += m.rss
		if m.rss == 0 {
			continue
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_PAGEOUT); errno != 0 {
			if errno == unix.EINVAL {
				// A kernel before 5.4, which has no MADV_PAGEOUT.
				return t, fmt.Errorf("%w: madvise(MADV_PAGEOUT): %w", ErrTrimUnsupported, errno)
			}
			continue // unmapped since the listing (ENOMEM): nothing to trim
		}
		t.Trimmed += m.rss
	}
	return t, nil
}

// tableMappings lists this process's mappings of the store's tables.
func (s *KV) tableMappings() ([]mapping, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrimUnsupported, err)
	}
	defer func() { _ = f.Close() }()
	return tableMappings(f, s.dir)
}
