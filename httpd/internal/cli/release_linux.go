//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseBinaryPages unmaps from this process the pages of its own
// executable that are mapped read-only and were never written (code,
// read-only data, the function tables), once the server is started. They
// are clean pages of the page cache: nothing is freed or read again from
// disk, and a page the server touches later is mapped back by a minor
// fault. What it drops is the start-up's share: Linux maps a file's pages
// a whole page-cache folio at a time (up to 2 MiB) around each fault,
// so the packages that only run at start (flag parsing, Pebble's open,
// the templates) leave most of the binary in the resident set
// (bench/RESULTS.md section 6, issue #41). It returns the bytes it
// released.
//
// A mapping with anonymous pages (the relocations the dynamic loader
// wrote before making them read-only) is left alone: MADV_DONTNEED would
// put the file's bytes back in their place.
func releaseBinaryPages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var released int64
	for _, m := range binaryMappings(smaps, exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += m.rss
	}
	return released, nil
}

// mapping is one read-only, never-written mapping of the executable.
type mapping struct {
	start, end uintptr
	rss        int64 // resident bytes before the release
}

// binaryMappings parses /proc/self/smaps into the mappings of the file
// exe that are not writable and hold no anonymous (copied-on-write) page.
func binaryMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	var cur *mapping
	ok := false
	keep := func() {
		if cur != nil && ok && cur.rss > 0 {
			out = append(out, *cur)
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if lo, hi, found := strings.Cut(f[0], "-"); found && !strings.HasSuffix(f[0], ":") {
			keep()
			cur, ok = nil, false
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 != nil || err2 != nil || len(f) < 6 || len(f[1]) < 2 {
				continue
			}
			path := strings.Join(f[5:], " ")
			cur = &mapping{start: uintptr(start), end: uintptr(end)}
			ok = path == exe && f[1][1] == '-'
			continue
		}
		if cur == nil || len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			cur.rss = n << 10
		case "Anonymous:":
			if n != 0 {
				ok = false
			}
		}
	}
	keep()
	return out
}
