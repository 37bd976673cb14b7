package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
)

// Machine describes the machine a report was measured on.
type Machine struct {
	OS, Arch   string
	GoVersion  string
	NumCPU     int
	GOMAXPROCS int
	// CPUModel is the first "model name" of /proc/cpuinfo ("" when it is
	// not readable).
	CPUModel string
	// MemTotal is MemTotal of /proc/meminfo in bytes (0 when not readable).
	MemTotal int64
	// Commit is the commit the program was built from (vcs.revision, with
	// "+modified" when the work tree had changes), "" when the build did
	// not record it.
	Commit string
}

// ThisMachine describes the running machine.
func ThisMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	m.Commit = buildCommit()
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		f := strings.Fields(v) // "24684096 kB"
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			if len(f) > 1 && strings.EqualFold(f[1], "kB") {
				n <<= 10
			}
			m.MemTotal = n
		}
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file whose key is key.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// buildCommit returns the commit recorded in the binary or, when the
// build did not record one (go run, -buildvcs=false), that of the git
// work tree around the current directory; "" if neither is known.
func buildCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return workTreeCommit()
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return workTreeCommit()
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+modified"
	}
	return rev
}

// workTreeCommit asks git for the commit of the work tree around the
// current directory, with "+modified" when it has changes (untracked
// files too, as go build counts them).
func workTreeCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	status, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		return ""
	}
	if len(bytes.TrimSpace(status)) > 0 {
		rev += "+modified"
	}
	return rev
}
