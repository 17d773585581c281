package badger

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	badgerdb "github.com/dgraph-io/badger/v4"
)

// sampleSmaps is /proc/self/smaps as Linux writes it, cut short: two
// table mappings of the store in /data/store, one of another store, a
// file whose name has a space, and anonymous memory.
const sampleSmaps = `00400000-00c00000 r-xp 00000000 fd:01 123 /usr/bin/vigil
Size:               8192 kB
Rss:                4096 kB
VmFlags: rd ex mr mw me
7f0000000000-7f0000800000 r--s 00000000 fd:01 200 /data/store/000012.sst
Size:               8192 kB
KernelPageSize:        4 kB
Rss:                6000 kB
Pss:                6000 kB
VmFlags: rd sh mr mw me ms
7f0000800000-7f0000900000 r--s 00000000 fd:01 201 /data/store/000013.sst
Size:               1024 kB
Rss:                   0 kB
7f0000900000-7f0000a00000 r--s 00000000 fd:01 202 /data/other/000013.sst
Rss:                 512 kB
7f0000a00000-7f0000b00000 rw-p 00000000 00:00 0 
Rss:                1024 kB
7f0000b00000-7f0000c00000 r--s 00000000 fd:01 203 /data/store/a b.sst
Rss:                   8 kB
`

func TestTableMappingsReadsTheStoresTablesOnly(t *testing.T) {
	got, err := tableMappings(strings.NewReader(sampleSmaps), "/data/store/")
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x7f0000000000, end: 0x7f0000800000, path: "/data/store/000012.sst", rss: 6000 << 10},
		{start: 0x7f0000800000, end: 0x7f0000900000, path: "/data/store/000013.sst", rss: 0},
		{start: 0x7f0000b00000, end: 0x7f0000c00000, path: "/data/store/a b.sst", rss: 8 << 10},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tableMappings:\n got %v\nwant %v", got, want)
	}
}

func TestTableMappingsRefusesAMalformedListing(t *testing.T) {
	for _, in := range []string{
		"7f00-7e00 r--s 0 fd:01 1 /d/1.sst\n",            // end before start
		"zz-7e00 r--s 0 fd:01 1 /d/1.sst\n",              // not hex
		"7f00-7f10 r--s 0 fd:01 1 /d/1.sst\nRss: x kB\n", // a size that is no number
		"7f00-7f10 r--s 0 fd:01 1 /d/1.sst\nRss: 4 MB\n", // nor in kB
		"just words\n",
	} {
		if _, err := tableMappings(strings.NewReader(in), "/d"); err == nil {
			t.Errorf("%q: read without an error", in)
		}
	}
}

func FuzzTableMappings(f *testing.F) {
	f.Add(sampleSmaps, "/data/store")
	f.Add("7f00-7f10 r--s 0 fd:01 1 /d/1.sst\nRss: 4 kB\n", "/d")
	f.Fuzz(func(t *testing.T, in, dir string) {
		ms, err := tableMappings(strings.NewReader(in), dir)
		if err != nil {
			return
		}
		for _, m := range ms {
			if !strings.HasSuffix(m.path, ".sst") || filepath.Dir(m.path) != filepath.Clean(dir) || m.end < m.start || m.rss < 0 {
				t.Fatalf("%+v: not a table mapping of %q", m, dir)
			}
		}
	})
}

// tablesResident is the resident bytes of kv's table mappings now.
func tablesResident(t *testing.T, kv *KV) (int64, int) {
	t.Helper()
	ms, err := kv.tableMappings()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range ms {
		n += m.rss
	}
	return n, len(ms)
}

// The budget is a guard: within it TrimMapped leaves the pages alone;
// past it (here 0) it hands every resident page of the tables back, and a
// read afterwards still finds every row.
func TestTrimMappedHandsTheTablesPagesBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	dir := t.TempDir()
	_, kv := openStore(t, dir, Options{})
	const rows = 40_000
	// Values that do not compress, so the tables are as large as the rows.
	val := make([]byte, 200)
	src := rand.NewChaCha8([32]byte{'t', 'r', 'i', 'm'})
	for i := 0; i < rows; i += 1000 {
		err := kv.db.Update(func(txn *badgerdb.Txn) error {
			for j := i; j < i+1000; j++ {
				_, _ = src.Read(val)
				if err := txn.Set(fmt.Appendf(nil, "trim/%08d", j), bytes.Clone(val)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.db.Flatten(1); err != nil { // memtables written out as tables
		t.Fatal(err)
	}
	readAll := func() int {
		n := 0
		err := kv.db.View(func(txn *badgerdb.Txn) error {
			it := txn.NewIterator(badgerdb.DefaultIteratorOptions)
			defer it.Close()
			for it.Seek([]byte("trim/")); it.ValidForPrefix([]byte("trim/")); it.Next() {
				if _, err := it.Item().ValueCopy(nil); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Flatten leaves the rows in the memtable: a close and an open put
	// them in tables, which a read then maps.
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	_, kv = openStore(t, dir, Options{})
	if n := readAll(); n != rows {
		t.Fatalf("read %d rows, want %d", n, rows)
	}
	before, tables := tablesResident(t, kv)
	if tables == 0 || before < 1<<20 {
		t.Fatalf("%d table mappings holding %d bytes: the test wants tables read", tables, before)
	}
	within, err := kv.TrimMapped(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	if within.Trimmed != 0 || within.FileResident == 0 {
		t.Fatalf("within the budget: %+v, want nothing trimmed", within)
	}
	if still, _ := tablesResident(t, kv); still < before/2 {
		t.Fatalf("within the budget the tables went from %d to %d resident bytes", before, still)
	}
	past, err := kv.TrimMapped(0)
	if errors.Is(err, ErrTrimUnsupported) {
		t.Skipf("this kernel cannot: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	after, _ := tablesResident(t, kv)
	if past.Trimmed < before/2 || after > before/4 {
		t.Fatalf("past the budget: %+v; the tables' resident bytes went from %d to %d", past, before, after)
	}
	if n := readAll(); n != rows {
		t.Fatalf("after the trim read %d rows, want %d", n, rows)
	}
}

func TestStatusFieldReadsOneSize(t *testing.T) {
	in := "Name:\tvigil\nVmRSS:\t  399332 kB\nRssFile:\t  122596 kB\n"
	if n, ok, err := statusField(strings.NewReader(in), "RssFile"); err != nil || !ok || n != 122596<<10 {
		t.Fatalf("RssFile: %d %v %v", n, ok, err)
	}
	if _, ok, err := statusField(strings.NewReader(in), "RssShmem"); ok || err != nil {
		t.Fatalf("an absent field: found %v, %v", ok, err)
	}
	if _, _, err := statusField(strings.NewReader("RssFile: lots\n"), "RssFile"); err == nil {
		t.Fatal("a size that is no number read without an error")
	}
}

func FuzzStatusField(f *testing.F) {
	f.Add("VmRSS:\t 1 kB\nRssFile:\t 2 kB\n", "RssFile")
	f.Fuzz(func(t *testing.T, in, name string) {
		n, ok, err := statusField(strings.NewReader(in), name)
		if (err != nil || !ok) && n != 0 || n < 0 {
			t.Fatalf("%q %q: %d %v %v", in, name, n, ok, err)
		}
	})
}
