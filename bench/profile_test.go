package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPartOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		stack []string // innermost first
		want  string
	}{
		{name: "a copy made by Pebble", stack: []string{"runtime.memmove", "github.com/cockroachdb/pebble/v2.(*Batch).Set", "github.com/webstats/webstats/engine.(*Engine).Track"}, want: "Pebble"},
		{name: "a map lookup of the engine", stack: []string{"aeshashbody", "runtime.mapaccess2_faststr", "github.com/webstats/webstats/engine.(*Engine).sid"}, want: "webstats engine"},
		{name: "fsync, standard library", stack: []string{"internal/runtime/syscall/linux.Syscall6", "syscall.Syscall", "syscall.Fdatasync", "internal/poll.(*FD).Fsync", "os.(*File).Sync"}, want: "system calls: fsync"},
		{name: "fsync, x/sys (Pebble's)", stack: []string{"internal/runtime/syscall/linux.Syscall6", "syscall.Syscall", "golang.org/x/sys/unix.Fdatasync", "github.com/cockroachdb/pebble/v2/vfs.(*linuxFile).Sync"}, want: "system calls: fsync"},
		{name: "a write to a file", stack: []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "github.com/cockroachdb/pebble/v2/wal.(*LogWriter).flushPending"}, want: "system calls: files"},
		{name: "a write to a socket", stack: []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write", "net/http.(*response).finishRequest"}, want: "system calls: network"},
		{name: "the collector", stack: []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, want: "garbage collection"},
		{name: "an allocation", stack: []string{"runtime.nextFreeFast", "runtime.mallocgc", "encoding/json.(*decodeState).object"}, want: "memory allocation"},
		{name: "strings called by encoding/json", stack: []string{"strings.Index", "encoding/json.(*decodeState).literalStore"}, want: "encoding/json"},
		{name: "the scheduler alone", stack: []string{"runtime.futex", "runtime.notesleep", "runtime.schedule"}, want: "runtime and low-level libraries"},
		{name: "a library", stack: []string{"github.com/mileusna/useragent.Parse"}, want: "user-agent parsing"},
		{name: "snappy", stack: []string{"github.com/golang/snappy.encodeBlock", "github.com/cockroachdb/pebble/v2/sstable/block.compress"}, want: "compression"},
		{name: "a package of its own", stack: []string{"golang.org/x/text/unicode/norm.(*reorderBuffer).insertOrdered"}, want: "golang.org/x/text/unicode/norm"},
		{name: "a generic function of a low-level package", stack: []string{"slices.Clone[go.shape.[]github.com/webstats/webstats/engine.hit]", "github.com/webstats/webstats/engine.(*segDay).index"}, want: "webstats engine"},
		{name: "a generic type's method", stack: []string{"github.com/cockroachdb/swiss.(*Map[go.shape.struct { github.com/cockroachdb/pebble/v2/internal/base.DiskFileNum }]).Get", "github.com/cockroachdb/pebble/v2.(*tableCacheShard).findNode"}, want: "github.com/cockroachdb/swiss"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := partOf(c.stack); got != c.want {
				t.Errorf("partOf(%q) = %q, want %q", c.stack, got, c.want)
			}
		})
	}
}

// spin keeps a core busy for about d on an idle machine: a fixed amount of
// work, so that a busy machine stretches its time, not shrinks its CPU.
func spin(d time.Duration) (n int) {
	rounds := int(d / time.Millisecond)
	for range rounds {
		for i := range 2_500_000 {
			n += i * i
		}
	}
	return n
}

// TestCPUProfile profiles a function that only spins, in a goroutine of its
// own: the profile finds it as where the CPU went, in the measurement's
// goroutines, and the report shows it.
func TestCPUProfile(t *testing.T) {
	rep := &Report{}
	r := &runner{rep: rep}
	p := Profile{Name: "spin", What: "a spinning loop", Targets: []string{"engine apply"}}
	if _, err := r.cpuProfile(false, false, p, func() error { spin(time.Millisecond); return nil }); err != nil || len(rep.Profiles) != 0 {
		t.Fatalf("off: %v, %d profiles", err, len(rep.Profiles))
	}
	_, err := r.cpuProfile(true, false, p, func() error {
		done := make(chan int)
		go func() { done <- spin(500 * time.Millisecond) }()
		<-done
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Profiles) == 0 {
		t.Skip("another CPU profile is running (go test -cpuprofile)")
	}
	got := rep.Profiles[0]
	if got.Kind != "cpu" || got.CPU < 100*time.Millisecond || got.Wall < got.CPU/time.Duration(max(1, got.Cores)) || got.Server != -1 || len(got.Data) == 0 {
		t.Fatalf("profile: kind %s, CPU %v over %v, server %v, %d bytes", got.Kind, got.CPU, got.Wall, got.Server, len(got.Data))
	}
	if got.Measured < 0.5 {
		t.Errorf("the measured goroutines took %.2f of the samples", got.Measured)
	}
	if len(got.Funcs) == 0 || got.Funcs[0].Name != "bench.spin" || got.Funcs[0].Share < 0.5 {
		t.Errorf("functions: %+v", got.Funcs)
	}
	if len(got.Parts) == 0 || got.Parts[0].Name != "the load generator (bench)" || got.Parts[0].Share < 0.5 {
		t.Errorf("parts: %+v", got.Parts)
	}
	var md strings.Builder
	rep.Pipeline = &PipelineResult{ApplyPerSec: 1000}
	rep.profilesMD(&md, "results/")
	for _, want := range []string{"### spin: a spinning loop", "Bears on: engine apply on one core (log replay) (1,000 hits/s; not met).", "| the load generator (bench) |", "| `bench.spin` |", "results/NAME.pprof"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, md.String())
		}
	}
}

// TestServerCPU: with clients in the process, every repetition runs under
// the profiler, kept or not, and the server's CPU is what was sampled
// outside the measurement's goroutines: here a "server" spinning for 300
// ms of work, started outside them, while the "clients" spin for 600 ms of
// work: about a third of the CPU sampled, whatever the machine's speed.
func TestServerCPU(t *testing.T) {
	run := func(keep bool) (cpu time.Duration, rep *Report) {
		rep = &Report{}
		r := &runner{rep: rep}
		start := make(chan struct{})
		served := make(chan int)
		go func() { <-start; served <- spin(300 * time.Millisecond) }()
		cpu, err := r.cpuProfile(keep, true, Profile{Name: "load"}, func() error {
			close(start)
			spin(600 * time.Millisecond)
			<-served
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if cpu < 0 {
			t.Skip("another CPU profile is running (go test -cpuprofile)")
		}
		return cpu, rep
	}
	if cpu, rep := run(false); len(rep.Profiles) != 0 || cpu <= 0 {
		t.Errorf("not kept: server CPU %v, %d profiles in the report, want some CPU and no profile", cpu, len(rep.Profiles))
	}
	cpu, rep := run(true)
	if len(rep.Profiles) != 1 {
		t.Fatalf("kept: %d profiles in the report, want 1", len(rep.Profiles))
	}
	if share := float64(cpu) / float64(rep.Profiles[0].CPU); share < 0.15 || share > 0.5 {
		t.Errorf("server CPU %v of %v sampled (%.2f), want about a third", cpu, rep.Profiles[0].CPU, share)
	}
}
