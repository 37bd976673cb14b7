//go:build linux

package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Only the executable's read-only mappings without copied-on-write pages
// are released: the relocations the loader wrote (anonymous pages in a
// read-only mapping) and the writable data would lose their contents.
func TestBinaryMappingsOnlyCleanReadOnly(t *testing.T) {
	const exe = "/opt/web stats/webstatsd"
	smaps := strings.Join([]string{
		"00400000-00402000 r--p 00000000 fe:00 1 " + exe,
		"Rss:                   8 kB",
		"Anonymous:             0 kB",
		"00402000-015cd000 r-xp 00002000 fe:00 1 " + exe,
		"Size:              18220 kB",
		"Rss:               15480 kB",
		"Anonymous:             0 kB",
		"015cd000-029bf000 r--p 011cd000 fe:00 1 " + exe,
		"Rss:                   0 kB",
		"Anonymous:             0 kB",
		"029bf000-029c0000 r--p 025be000 fe:00 1 " + exe,
		"Rss:                   4 kB",
		"Anonymous:             4 kB",
		"029c0000-02f5b000 rw-p 025bf000 fe:00 1 " + exe,
		"Rss:                1288 kB",
		"Anonymous:             0 kB",
		"7f0000000000-7f0000200000 r-xp 00000000 fe:00 2 /usr/lib/libc.so.6",
		"Rss:                 792 kB",
		"Anonymous:             0 kB",
		"7f0000400000-7f0000500000 rw-p 00000000 00:00 0",
		"Rss:                5824 kB",
		"Anonymous:          5824 kB",
	}, "\n")
	got := binaryMappings([]byte(smaps), exe)
	want := []mapping{
		{start: 0x400000, end: 0x402000, rss: 8 << 10},
		{start: 0x402000, end: 0x15cd000, rss: 15480 << 10},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); diff != "" {
		t.Errorf("mappings (-want +got):\n%s", diff)
	}
}

// The release takes the executable's pages out of the resident set of
// the running process, which goes on running (this test's own code and
// the runtime are in those pages), and leaves its written pages alone.
func TestReleaseBinaryPages(t *testing.T) {
	before, beforeAnon := exeResident(t)
	n, err := releaseBinaryPages()
	if err != nil {
		t.Fatal(err)
	}
	after, afterAnon := exeResident(t)
	t.Logf("executable resident %d KiB → %d KiB (released %d KiB)", before>>10, after>>10, n>>10)
	if n <= 0 || after >= before {
		t.Errorf("released %d bytes; the executable's resident pages went from %d to %d bytes", n, before, after)
	}
	if beforeAnon == 0 || afterAnon != beforeAnon {
		t.Errorf("the written pages of the executable's read-only mappings went from %d to %d bytes", beforeAnon, afterAnon)
	}
}

// exeResident sums the resident bytes of this process's mappings of its
// executable, and the anonymous bytes of the read-only ones (the written
// data's pages change as the program runs), read from /proc/self/smaps.
func exeResident(t *testing.T) (rss, anon int64) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in, readOnly := false, false
	for line := range strings.Lines(string(smaps)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 6 && strings.Contains(f[0], "-"):
			in = strings.Join(f[5:], " ") == exe
			readOnly = len(f[1]) > 1 && f[1][1] == '-'
		case in && len(f) == 3 && f[0] == "Rss:":
			rss += kib(t, f[1])
		case in && readOnly && len(f) == 3 && f[0] == "Anonymous:":
			anon += kib(t, f[1])
		}
	}
	return rss, anon
}

func kib(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number of KiB: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n << 10
}
