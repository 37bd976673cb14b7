package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Profile is a profile taken during one measurement behind targets the
// issue sets, summarised for the report's "what bounds it": where the CPU
// time (or, for memory, the live heap) goes. The raw profile is Data,
// written beside the report as results/<Name>.pprof for `go tool pprof`.
type Profile struct {
	// Name is the file's stem; What the measurement, as the report names
	// it; Targets the targets it bears on (Target.What).
	Name, What string
	Targets    []string
	// Kind is "cpu" or "heap".
	Kind string
	// For a CPU profile: Wall is how long the measurement ran, CPU the
	// CPU time sampled over it, Cores GOMAXPROCS. For a heap profile:
	// Heap the live bytes the profile accounts for (sampled).
	Wall, CPU time.Duration
	Cores     int
	Heap      int64
	// Measured is the share of the samples taken in the measurement's own
	// goroutines (those it started, labelled with pprof.Do); the rest is
	// background work: Pebble's own goroutines (its log writer, flushes,
	// compactions and file deletions, which label themselves), the
	// engine's loops started before, the collector. In the HTTP loads the
	// measurement's goroutines are the load generator's clients, and
	// Server is the share of the in-process server's goroutines
	// (startServer labels them). -1: not known (a heap profile, the
	// binary's profile; Server: not an HTTP load).
	Measured, Server float64
	// Parts and Funcs are the largest shares of the samples, by part of
	// the program and by function (for CPU, where the sample was taken;
	// for the heap, ownerOf).
	Parts, Funcs []Share
	Data         []byte
}

// Share is a part of a profile's samples.
type Share struct {
	Name  string
	Share float64
}

// How many parts and functions a profile keeps.
const (
	profileParts = 8
	profileFuncs = 10
)

// measuredLabel is the pprof label of the measurement's goroutines,
// serverLabel that of an in-process server's (startServer).
const (
	measuredLabel = "webstats-bench"
	serverLabel   = "webstats-bench-server"
)

// cpuProfile runs fn under the CPU profiler when keep, and adds its
// profile to the report; clients says fn runs HTTP clients in this process,
// against a server whose connections are not fn's (Server): then fn always
// runs under the profiler, keep or not, and serverCPU is the CPU time
// sampled outside fn's goroutines (the server's, Pebble's, the collector's
// and the scheduler's), the load's cost to the server (-1 when the
// profiler was not available). The profiler samples at the runtime's
// default 100 Hz, which costs the measurement little; the profiled
// repetition counts among the repetitions like the others. When another
// CPU profile is running (go test -cpuprofile), fn runs without.
func (r *runner) cpuProfile(keep, clients bool, p Profile, fn func() error) (serverCPU time.Duration, err error) {
	if !keep && !clients {
		return -1, fn()
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return -1, fn()
	}
	stopped := false
	defer func() {
		if !stopped {
			pprof.StopCPUProfile() // fn panicked
		}
	}()
	start := time.Now()
	pprof.Do(context.Background(), pprof.Labels(measuredLabel, p.Name), func(context.Context) { err = fn() })
	p.Wall = time.Since(start)
	pprof.StopCPUProfile()
	stopped = true
	if err != nil {
		return -1, err
	}
	p.Kind, p.Cores, p.Data = "cpu", runtime.GOMAXPROCS(0), buf.Bytes()
	if err := p.summarise(true, clients); err != nil {
		return -1, err
	}
	serverCPU = time.Duration(float64(p.CPU) * (1 - p.Measured))
	if keep {
		r.rep.Profiles = append(r.rep.Profiles, &p)
	}
	return serverCPU, nil
}

// heapProfile adds a profile of the live heap to the report.
func (r *runner) heapProfile(p Profile) error {
	runtime.GC() // the profile shows the heap as of the last collection
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	p.Kind, p.Data = "heap", buf.Bytes()
	if err := p.summarise(false, false); err != nil {
		return err
	}
	r.rep.Profiles = append(r.rep.Profiles, &p)
	return nil
}

// summarise fills CPU or Heap, Measured (when labelled, else -1), Server
// (with clients, else -1), Parts and Funcs from Data. Funcs are where CPU
// samples were taken; for the heap, the innermost function above the
// low-level libraries (ownerOf).
func (p *Profile) summarise(labelled, clients bool) error {
	prof, err := profile.Parse(bytes.NewReader(p.Data))
	if err != nil {
		return fmt.Errorf("bench: profile %s: %w", p.Name, err)
	}
	value := -1
	want := "cpu"
	if p.Kind == "heap" {
		want = "inuse_space"
	}
	for i, st := range prof.SampleType {
		if st.Type == want {
			value = i
		}
	}
	if value < 0 {
		return fmt.Errorf("bench: profile %s has no %s samples", p.Name, want)
	}
	parts, funcs := map[string]int64{}, map[string]int64{}
	var total, measured, server int64
	var stack []string
	for _, s := range prof.Sample {
		v := s.Value[value]
		stack = stack[:0]
		for _, loc := range s.Location {
			// A location's lines are innermost first (inlined calls).
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		if len(stack) == 0 || v == 0 {
			continue
		}
		total += v
		if p.Kind == "heap" {
			// Where the memory is allocated for: io.ReadAll's buffer is
			// its caller's.
			funcs[shortFunc(ownerOf(stack))] += v
		} else {
			funcs[shortFunc(stack[0])] += v
		}
		parts[partOf(stack)] += v
		switch {
		case len(s.Label[measuredLabel]) > 0:
			measured += v
		case len(s.Label[serverLabel]) > 0:
			server += v
		}
	}
	if p.Kind == "heap" {
		p.Heap = total
	} else {
		p.CPU = time.Duration(total)
	}
	p.Measured, p.Server = -1, -1
	if labelled {
		p.Measured = share(measured, total)
	}
	if clients {
		p.Server = share(server, total)
	}
	p.Parts, p.Funcs = top(parts, total, profileParts), top(funcs, total, profileFuncs)
	return nil
}

func share(v, total int64) float64 {
	if total <= 0 {
		return 0
	}
	return float64(v) / float64(total)
}

// top returns the n largest values of m as shares of total.
func top(m map[string]int64, total int64, n int) []Share {
	out := make([]Share, 0, len(m))
	for k, v := range m {
		out = append(out, Share{k, share(v, total)})
	}
	slices.SortFunc(out, func(a, b Share) int {
		return cmp.Or(cmp.Compare(b.Share, a.Share), strings.Compare(a.Name, b.Name))
	})
	return out[:min(n, len(out))]
}

const module = "github.com/webstats/webstats"

// partOf names the part of the program a stack (innermost first) is in:
// the garbage collector's and the allocator's work wherever they run,
// system calls by what they do, else the innermost function above the
// runtime and the low-level libraries (so that a copy made by Pebble is
// Pebble's), by its package, grouped by library.
func partOf(stack []string) string {
	has := func(prefixes ...string) bool {
		for _, f := range stack {
			for _, p := range prefixes {
				if strings.HasPrefix(f, p) {
					return true
				}
			}
		}
		return false
	}
	leaf := funcPackage(stack[0])
	switch {
	case has("runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep", "runtime.bgscavenge", "runtime.gcStart", "runtime.markroot"):
		return "garbage collection"
	case leaf == "syscall" || strings.HasPrefix(leaf, "internal/runtime/syscall") || strings.HasPrefix(leaf, "runtime/internal/syscall") || leaf == "internal/syscall/unix":
		switch {
		case has("syscall.Fdatasync", "syscall.Fsync", "os.(*File).Sync", "internal/poll.(*FD).Fsync",
			"golang.org/x/sys/unix.Fdatasync", "golang.org/x/sys/unix.Fsync", "golang.org/x/sys/unix.SyncFileRange"):
			return "system calls: fsync"
		case has("net.", "net/http."):
			return "system calls: network"
		case has("os.(*File)", "github.com/cockroachdb/pebble"):
			return "system calls: files"
		}
		return "system calls: other"
	case has("runtime.mallocgc", "runtime.growslice", "runtime.newobject", "runtime.makeslice"):
		return "memory allocation"
	}
	return group(ownerOf(stack))
}

// ownerOf is the innermost function of a stack (innermost first) above
// the runtime and the low-level libraries, or the innermost if all are.
func ownerOf(stack []string) string {
	for _, f := range stack {
		if !lowLevel(funcPackage(f)) {
			return f
		}
	}
	return stack[0]
}

// lowLevel reports whether a package is the runtime's or a library the
// rest use for everything (bytes, strings, maps, I/O helpers, ...): its
// cost belongs to whoever called it.
func lowLevel(pkg string) bool {
	if !strings.Contains(pkg, ".") && !strings.Contains(pkg, "/") && !slices.Contains(stdLeaves, pkg) {
		return true // an assembly symbol: aeshashbody, memeqbody, ...
	}
	for _, p := range []string{"runtime", "internal", "bytes", "strings", "strconv", "sync", "slices", "maps", "sort", "unicode", "io", "math", "hash", "errors", "reflect", "iter", "cmp", "unsafe", "bufio", "container"} {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// stdLeaves are standard packages whose path has no '/' and that are parts
// of their own (not low-level).
var stdLeaves = []string{"net", "os", "time", "context", "crypto", "fmt", "log"}

// group names the part of the program a function is in.
func group(f string) string {
	pkg := funcPackage(f)
	for _, g := range partNames {
		if pkg == g.prefix || strings.HasPrefix(pkg, g.prefix+"/") {
			return g.name
		}
	}
	if lowLevel(pkg) {
		return "runtime and low-level libraries"
	}
	return pkg
}

// partNames groups packages into parts (the first prefix that matches).
var partNames = []struct{ prefix, name string }{
	{module + "/engine", "webstats engine"},
	{module + "/httpd", "webstats httpd"},
	{module + "/snapshot", "webstats snapshot (store)"},
	{module + "/buckets", "webstats buckets"},
	{module + "/bench", "the load generator (bench)"},
	{"github.com/cockroachdb/pebble", "Pebble"},
	{"github.com/RoaringBitmap", "roaring bitmaps"},
	{"github.com/mileusna/useragent", "user-agent parsing"},
	{"github.com/phuslu/iploc", "geolocation"},
	{"github.com/oschwald", "geolocation"},
	{"github.com/klauspost/compress", "compression"},
	{"github.com/DataDog/zstd", "compression"},
	{"github.com/golang/snappy", "compression"},
	{"github.com/minio/minlz", "compression"},
	{"compress", "compression"},
	{"encoding/json", "encoding/json"},
	{"net/http", "net/http"},
	{"net", "net"},
	{"internal/poll", "net"},
	{"crypto", "crypto"},
	{"vendor/golang.org/x/net", "net/http"},
}

// funcPackage is the package path of a function's symbol name
// ("github.com/a/b.(*T).M" is in "github.com/a/b"; a generic one's type
// arguments, which may hold paths, are left out).
func funcPackage(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 {
		name = name[:i]
	}
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return name
	}
	return name[:slash+1+dot]
}

// shortFunc is a function's name for the report: this module's without
// its path, Pebble's and roaring's without theirs.
func shortFunc(name string) string {
	for _, p := range []string{module + "/", "github.com/cockroachdb/", "github.com/RoaringBitmap/roaring/v2/"} {
		if strings.HasPrefix(name, p) {
			return name[len(p):]
		}
	}
	return name
}

// bears returns the targets whose What starts with one of p.Targets.
func (p *Profile) bears(all []Target) []Target {
	var out []Target
	for _, t := range all {
		for _, prefix := range p.Targets {
			if strings.HasPrefix(t.What, prefix) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func (r *Report) profilesMD(b *strings.Builder, prefix string) {
	b.WriteString("## 8. What bounds the targets\n\n")
	if len(r.Profiles) == 0 {
		b.WriteString("No profiles were taken (a full run takes them; `go test -cpuprofile` leaves them out).\n\n")
		return
	}
	b.WriteString("A profile of each measurement behind the targets above, taken during its last repetition. CPU profiles: `runtime/pprof` at 100 Hz over the measurement. The memory profile: the live heap, sampled by the runtime about every 512 KiB allocated. Each is beside this report (`go tool pprof -top " + prefix + "NAME.pprof`). *Parts* group the samples by where they were taken: the garbage collector's and the allocator's work wherever it runs, system calls by what they do, else the package of the function, grouped by library. *Functions* are where the CPU samples were taken (flat), and for the heap the innermost function above the runtime and the low-level libraries (what the memory was allocated for). The profiled repetition counts among the repetitions. A CPU profile covers the whole process: the share of the measurement's own goroutines is given apart from background work; in the HTTP loads the clients run in this process, on the same cores, and the load generator's share is given apart from the server's.\n\n")
	all := r.Targets()
	for _, p := range r.Profiles {
		fmt.Fprintf(b, "### %s: %s\n\n", p.Name, p.What)
		if ts := p.bears(all); len(ts) > 0 {
			var names []string
			for _, t := range ts {
				status := strings.Trim(t.Status(), "*")
				if t.Measured() {
					status = t.Got + "; " + status
				}
				names = append(names, fmt.Sprintf("%s (%s)", t.What, status))
			}
			fmt.Fprintf(b, "Bears on: %s.\n\n", strings.Join(names, "; "))
		}
		switch p.Kind {
		case "heap":
			fmt.Fprintf(b, "Live heap in the profile: %s.", formatBytes(float64(p.Heap)))
		default:
			fmt.Fprintf(b, "CPU: %s sampled over %s with %d cores: %.0f%% of them busy.", formatDur(p.CPU), formatDur(p.Wall), p.Cores,
				100*p.CPU.Seconds()/(p.Wall.Seconds()*float64(max(1, p.Cores))))
			switch {
			case p.Measured == 0 && p.Server == 0:
				// A report made before the shares were taken.
			case p.Server >= 0:
				fmt.Fprintf(b, " Of it, the load generator (its clients, in this process) took %.0f%%, the server's goroutines %.0f%%, the rest (Pebble's own goroutines, the collector, the scheduler) %.0f%%.",
					100*p.Measured, 100*p.Server, 100*max(0, 1-p.Measured-p.Server))
			case p.Measured >= 0:
				fmt.Fprintf(b, " Of it, the measured code (its goroutines) took %.0f%%, background work the other %.0f%%: Pebble's own goroutines (its log writer, with its writes and fsyncs, flushes and compactions), the engine's loops started before, the collector.",
					100*p.Measured, 100*(1-p.Measured))
			}
		}
		if len(p.Parts) > 0 {
			fmt.Fprintf(b, " The largest part: %s, %.0f%%.", p.Parts[0].Name, 100*p.Parts[0].Share)
		}
		b.WriteString("\n\n")
		rows := make([][]string, max(len(p.Parts), len(p.Funcs)))
		for i := range rows {
			rows[i] = []string{"", "", "", ""}
			if i < len(p.Parts) {
				rows[i][0], rows[i][1] = p.Parts[i].Name, fmt.Sprintf("%.1f%%", 100*p.Parts[i].Share)
			}
			if i < len(p.Funcs) {
				rows[i][2], rows[i][3] = "`"+p.Funcs[i].Name+"`", fmt.Sprintf("%.1f%%", 100*p.Funcs[i].Share)
			}
		}
		table(b, []string{"part", "share", "function", "share"}, rows)
	}
}
