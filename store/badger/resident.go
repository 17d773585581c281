package badger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// Badger reads its table files through memory maps: every page the store
// reads (a table's index when it opens, the blocks a read or a compaction
// touches) and every page a compaction writes stays in the process's
// resident set until the kernel needs the memory back. They are clean
// page-cache pages, dropped under pressure, but a host that waits on ten
// million watches would show gigabytes of them, and the resident size is
// what an operator's budget reads. TrimMapped hands them back.

// MappedTrim is what one TrimMapped pass found and did.
type MappedTrim struct {
	// FileResident is the process's resident file-backed memory before
	// the pass (RssFile): every mapped file, the binary's own pages too.
	FileResident int64
	// Tables is the resident size of the store's table files before the
	// pass, Trimmed what the pass advised the kernel to reclaim (zero when
	// FileResident was within the budget and the tables were not read).
	Tables, Trimmed int64
}

// ErrTrimUnsupported: the platform has no way to hand mapped pages back
// (TrimMapped works on Linux only).
var ErrTrimUnsupported = errors.New("badger: trimming mapped table pages is not supported on this platform")

// mapping is one mapped range of a file and how much of it is resident.
type mapping struct {
	start, end uintptr
	path       string
	rss        int64
}

// tableMappings reads an smaps listing (/proc/self/smaps) and returns the
// ranges that map the table files (*.sst) directly inside dir, with their
// resident bytes. A line it cannot read is an error naming it: the
// listing is the kernel's, so a malformed one means the format changed.
func tableMappings(r io.Reader, dir string) ([]mapping, error) {
	dir = filepath.Clean(dir)
	var out []mapping
	cur := -1 // index in out of the mapping whose fields follow, or -1
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && isField(k) {
			if cur >= 0 && string(k) == "Rss" {
				kb, err := kilobytes(v)
				if err != nil {
					return nil, fmt.Errorf("smaps line %d: %w", n, err)
				}
				out[cur].rss = kb
			}
			continue
		}
		m, path, err := header(line)
		if err != nil {
			return nil, fmt.Errorf("smaps line %d: %w", n, err)
		}
		cur = -1
		if strings.HasSuffix(path, ".sst") && filepath.Dir(path) == dir {
			m.path = path
			out = append(out, m)
			cur = len(out) - 1
		}
	}
	return out, sc.Err()
}

// isField says whether k is a field name of smaps ("Rss", "VmFlags"): a
// word of letters, digits and underscores, never an address range.
func isField(k []byte) bool {
	if len(k) == 0 || bytes.IndexByte(k, ' ') >= 0 || bytes.IndexByte(k, '-') >= 0 {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// header reads a mapping's first line: "start-end perms offset dev inode
// [path]", the path the rest of the line (it may hold spaces).
func header(line []byte) (mapping, string, error) {
	fields := bytes.Fields(line)
	if len(fields) < 5 {
		return mapping{}, "", fmt.Errorf("%q: not a mapping", line)
	}
	lo, hi, ok := bytes.Cut(fields[0], []byte("-"))
	if !ok {
		return mapping{}, "", fmt.Errorf("%q: no address range", line)
	}
	start, err1 := strconv.ParseUint(string(lo), 16, 64)
	end, err2 := strconv.ParseUint(string(hi), 16, 64)
	if err1 != nil || err2 != nil || end < start {
		return mapping{}, "", fmt.Errorf("%q: a bad address range", line)
	}
	path := ""
	if len(fields) > 5 {
		// The path starts at the sixth field and runs to the line's end.
		i := bytes.Index(line, fields[5])
		path = strings.TrimSpace(string(line[i:]))
	}
	return mapping{start: uintptr(start), end: uintptr(end)}, path, nil
}

// kilobytes reads " 1234 kB" as bytes.
func kilobytes(v []byte) (int64, error) {
	s := strings.TrimSpace(string(v))
	num, unit, _ := strings.Cut(s, " ")
	if unit != "kB" {
		return 0, fmt.Errorf("%q: not a size in kB", s)
	}
	kb, err := strconv.ParseInt(num, 10, 64)
	if err != nil || kb < 0 {
		return 0, fmt.Errorf("%q: not a size in kB", s)
	}
	return kb << 10, nil
}

// statusField reads one "Name: N kB" field of /proc/self/status, in
// bytes; found is false when the listing has none.
func statusField(r io.Reader, name string) (int64, bool, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != name {
			continue
		}
		b, err := kilobytes([]byte(v))
		return b, err == nil, err
	}
	return 0, false, sc.Err()
}
