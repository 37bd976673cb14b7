package bench

import (
	"bufio"
	"os"
	"runtime"
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
}

// ThisMachine describes the running machine.
func ThisMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
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
