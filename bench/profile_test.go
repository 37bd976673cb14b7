package bench

import (
	"strings"
	"testing"
	"time"
)

func TestPartOf(t *testing.T) {
	for _, c := range []struct {
		stack []string // innermost first
		want  string
	}{
		{[]string{"runtime.memmove", "github.com/cockroachdb/pebble/v2.(*Batch).Set", "github.com/webstats/webstats/engine.(*Engine).Track"}, "Pebble"},
		{[]string{"aeshashbody", "runtime.mapaccess2_faststr", "github.com/webstats/webstats/engine.(*Engine).sid"}, "webstats engine"},
		{[]string{"internal/runtime/syscall/linux.Syscall6", "syscall.Syscall", "syscall.Fdatasync", "internal/poll.(*FD).Fsync", "os.(*File).Sync"}, "system calls: fsync"},
		{[]string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write", "net/http.(*response).finishRequest"}, "system calls: network"},
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "garbage collection"},
		{[]string{"runtime.nextFreeFast", "runtime.mallocgc", "encoding/json.(*decodeState).object"}, "memory allocation"},
		{[]string{"strings.Index", "encoding/json.(*decodeState).literalStore"}, "encoding/json"},
		{[]string{"runtime.futex", "runtime.notesleep", "runtime.schedule"}, "runtime and low-level libraries"},
		{[]string{"github.com/mileusna/useragent.Parse"}, "user-agent parsing"},
		{[]string{"golang.org/x/text/unicode/norm.(*reorderBuffer).insertOrdered"}, "golang.org/x/text/unicode/norm"},
	} {
		if got := partOf(c.stack); got != c.want {
			t.Errorf("partOf(%q) = %q, want %q", c.stack, got, c.want)
		}
	}
}

// spin keeps a core busy for d.
func spin(d time.Duration) (n int) {
	for start := time.Now(); time.Since(start) < d; {
		for i := range 100_000 {
			n += i * i
		}
	}
	return n
}

// TestCPUProfile profiles a function that only spins: the profile finds it
// as the one place the CPU went, and the report shows it.
func TestCPUProfile(t *testing.T) {
	rep := &Report{}
	r := &runner{rep: rep}
	p := Profile{Name: "spin", What: "a spinning loop", Targets: []string{"engine apply"}}
	if err := r.cpuProfile(false, false, p, func() error { spin(time.Millisecond); return nil }); err != nil || len(rep.Profiles) != 0 {
		t.Fatalf("off: %v, %d profiles", err, len(rep.Profiles))
	}
	if err := r.cpuProfile(true, false, p, func() error { spin(500 * time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rep.Profiles) == 0 {
		t.Skip("another CPU profile is running (go test -cpuprofile)")
	}
	got := rep.Profiles[0]
	if got.Kind != "cpu" || got.CPU < 200*time.Millisecond || got.Wall < 500*time.Millisecond || got.Client != -1 || len(got.Data) == 0 {
		t.Fatalf("profile: kind %s, CPU %v over %v, client %v, %d bytes", got.Kind, got.CPU, got.Wall, got.Client, len(got.Data))
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
