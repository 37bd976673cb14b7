package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// siteBySize returns the Site of a size name.
func siteBySize(size string) (Site, bool) {
	switch size {
	case "small":
		return Small, true
	case "medium":
		return Medium, true
	case "large":
		return Large, true
	}
	return Site{}, false
}

// statNames lists the 17 statistics.
func statNames() []string { return engine.StatNames() }

// PeakFactor is the ratio of the busiest hour's traffic to the average
// hour's in the generated diurnal curve (about 1.65).
func PeakFactor() float64 {
	var sum, top float64
	for _, h := range hourly {
		sum += h
		top = max(top, h)
	}
	return top / (sum / float64(len(hourly)))
}

// clock is a settable engine clock: the runs that load history move it
// along with the days they load, so the engine freezes and evicts closed
// days as it would in production.
type clock struct{ ns atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}

func (c *clock) set(t time.Time)      { c.ns.Store(t.UnixNano()) }
func (c *clock) now() time.Time       { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) fn() func() time.Time { return c.now }

// benchAccount is the account every run's websites belong to.
const benchEmail = "bench@localhost"

// setup creates the bench account and a public website per domain on e,
// and returns the account, its API key and the website ids by domain.
func setup(ctx context.Context, e *engine.Engine, domains ...string) (identity.Account, string, map[string]uint32, error) {
	a, key, err := identity.Must(e).CreateAccount(ctx, "bench", benchEmail)
	if err != nil {
		return a, "", nil, fmt.Errorf("create account: %w", err)
	}
	ids := make(map[string]uint32)
	public := "0"
	for _, d := range domains {
		w, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d, Privacy: &public})
		if err != nil {
			return a, "", nil, fmt.Errorf("create website %s: %w", d, err)
		}
		ids[d] = w.ID
	}
	return a, key, ids, nil
}

// trackBatches tracks hits in calls of batch hits each and returns how many
// were counted.
func trackBatches(ctx context.Context, e *engine.Engine, hits []engine.Hit, batch int) (int, error) {
	n := 0
	for i := 0; i < len(hits); i += batch {
		res, err := e.Track(ctx, hits[i:min(i+batch, len(hits))]...)
		if err != nil {
			return n, err
		}
		n += res.Accepted
	}
	return n, nil
}

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) (int64, error) { return walkSize(dir, fs.FileInfo.Size) }

// dirAllocated returns the bytes the file system allocated to the files
// under dir: what du counts, and what the files take from the disk. It
// includes space reserved ahead (the store allocates its write-ahead log
// files ahead of their writes) that the files' sizes do not show.
func dirAllocated(dir string) (int64, error) { return walkSize(dir, allocated) }

// walkSize sums size over the regular files under dir.
func walkSize(dir string, size func(fs.FileInfo) int64) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed since it was listed: an open store compacts meanwhile
			}
			if err != nil {
				return err
			}
			n += size(info)
		}
		return nil
	})
	return n, err
}

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Latency summarises a sample of durations.
type Latency struct {
	N                   int
	P50, P95, P99, P999 time.Duration
	Max                 time.Duration
}

// latencyOf summarises ds; it sorts ds.
func latencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(ds)))) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	return Latency{N: len(ds), P50: q(0.50), P95: q(0.95), P99: q(0.99), P999: q(0.999), Max: ds[len(ds)-1]}
}

// medianLatency takes, field by field, the median of several summaries.
// medianDur is the median of ds.
func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}

func medianLatency(ls []Latency) Latency {
	pick := func(f func(Latency) time.Duration) time.Duration {
		xs := make([]float64, len(ls))
		for i, l := range ls {
			xs[i] = float64(f(l))
		}
		return time.Duration(median(xs))
	}
	out := Latency{
		P50: pick(func(l Latency) time.Duration { return l.P50 }), P95: pick(func(l Latency) time.Duration { return l.P95 }),
		P99: pick(func(l Latency) time.Duration { return l.P99 }), P999: pick(func(l Latency) time.Duration { return l.P999 }),
		Max: pick(func(l Latency) time.Duration { return l.Max }),
	}
	for _, l := range ls {
		out.N += l.N
	}
	return out
}

// removeAll removes a data directory, ignoring errors: it is scratch.
func removeAll(dir string) { _ = os.RemoveAll(dir) }
