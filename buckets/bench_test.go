package buckets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The "large" site of SPEC §9: 333k pageviews, 100k visitors and 5,000
// distinct pages a day.
const (
	simPageviews = 333_000
	simVisitors  = 100_000
	simPages     = 5_000
	vocabulary   = 20_000 // distinct pages over a year
)

// zipfWeights returns n weights proportional to 1/(rank+1)^s.
func zipfWeights(n int, s float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1 / math.Pow(float64(i+1), s)
	}
	return w
}

// sampler draws indexes in proportion to weights (by the cumulative sums).
type sampler struct{ cum []float64 }

func newSampler(w []float64) sampler {
	cum := make([]float64, len(w))
	t := 0.0
	for i, v := range w {
		t += v
		cum[i] = t
	}
	return sampler{cum}
}

func (s sampler) draw(r *rand.Rand) int {
	x := r.Float64() * s.cum[len(s.cum)-1]
	i, _ := slices.BinarySearch(s.cum, x)
	return min(i, len(s.cum)-1)
}

// pageNames are the pages of the vocabulary: paths of 20 to 40 bytes, as
// on a blog or a shop.
var pageNames = func() []string {
	sections := []string{"/blog/", "/docs/guide/", "/products/", "/t/", "/help/articles/"}
	r := rand.New(rand.NewPCG(7, 7))
	names := make([]string, vocabulary)
	for i := range names {
		slug := make([]byte, 8+r.IntN(16))
		for j := range slug {
			slug[j] = "abcdefghijklmnopqrstuvwxyz-"[r.IntN(27)]
		}
		names[i] = fmt.Sprintf("%s%s-%d", sections[i%len(sections)], slug, i)
	}
	return names
}()

// dayPages returns the pages seen on one day: simPages distinct pages of
// the vocabulary, the most popular every day and the tail varying.
func dayPages(r *rand.Rand) []string {
	const always = simPages * 3 / 5
	pages := make([]string, 0, simPages)
	pages = append(pages, pageNames[:always]...)
	seen := map[uint32]bool{}
	for len(pages) < simPages {
		id := always + r.Uint32N(vocabulary-always)
		if !seen[id] {
			seen[id] = true
			pages = append(pages, pageNames[id])
		}
	}
	return pages
}

// simulateDay builds a realistic day of the large site: visitors arrive
// through the day (ids in order of arrival), make ~1.2 visits and ~3.3
// pageviews each on Zipf-distributed pages, and carry per-visitor values.
func simulateDay(r *rand.Rand, period Date) *Day {
	d := NewDay(period)
	pages := dayPages(r)
	pageSampler := newSampler(zipfWeights(len(pages), 1.0))
	// Diurnal traffic: more in the afternoon.
	hourW := make([]float64, 24)
	for h := range hourW {
		hourW[h] = 1.2 + math.Sin(float64(h-9)*math.Pi/12)
	}
	hourSampler := newSampler(hourW)
	firstHours := make([]int, simVisitors)
	for i := range firstHours {
		firstHours[i] = hourSampler.draw(r)
	}
	slices.Sort(firstHours)

	// The values of the other dimensions: "<dim>-<rank>".
	type dimSpec struct {
		dim Dim
		n   int
	}
	perVisitor := []dimSpec{{Browser, 30}, {OS, 20}, {Device, 3}, {Resolution, 200}, {Language, 50}, {Country, 150}, {Continent, 7}, {City, 2000}}
	samplers := map[Dim]sampler{}
	names := map[Dim][]string{}
	for _, s := range append(perVisitor, dimSpec{Referrer, 500}, dimSpec{Campaign, 20}, dimSpec{Event, 50}) {
		samplers[s.dim] = newSampler(zipfWeights(s.n, 1.2))
		for i := range s.n {
			names[s.dim] = append(names[s.dim], fmt.Sprintf("%v-%d", s.dim, i))
		}
	}
	draw := func(dim Dim) string { return names[dim][samplers[dim].draw(r)] }

	pv := 0
	for v := range uint32(simVisitors) {
		hour := firstHours[v]
		// Pageviews per visitor: 1 + geometric, mean 3.33.
		n := 1
		for r.Float64() < 1-1/2.33 {
			n++
		}
		if v == simVisitors-1 {
			n = max(1, simPageviews-pv) // land exactly on the day's total
		}
		for i := range n {
			if i > 0 && r.IntN(10) == 0 {
				hour = min(23, hour+1+r.IntN(3)) // back later in the day
			}
			page := pages[pageSampler.draw(r)]
			d.AddPageview(hour)
			d.Add(Page, page, 1, 0)
			newToDay, _ := d.AddVisitor(hour, v)
			if newToDay {
				for _, s := range perVisitor {
					d.Add(s.dim, draw(s.dim), 1, 0)
				}
			}
			if i == 0 || r.IntN(15) == 0 { // a new visit
				d.Visits++
				d.Add(LandingPage, page, 1, 0)
				d.Add(Referrer, draw(Referrer), 1, 0)
				if r.IntN(10) == 0 {
					d.Add(Campaign, draw(Campaign), 1, 0)
				}
			}
			if r.IntN(20) == 0 {
				d.Events++
				d.Add(Event, draw(Event), 1, 0)
			}
			pv++
		}
	}
	return d
}

// countsDay returns a compacted day with simPages Zipf-like page counts.
func countsDay(r *rand.Rand, period Date) *Day {
	d := NewDay(period)
	pages := dayPages(r)
	for rank, page := range pages {
		d.Add(Page, page, uint64(1+simPageviews/(rank+1)/10), 0)
	}
	d.Compact()
	return d
}

func BenchmarkDayAdd(b *testing.B) {
	for _, state := range []string{"open", "compacted"} {
		b.Run("state="+state, func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			d := countsDay(r, 0)
			if state == "open" {
				d = NewDay(0)
			}
			pages := dayPages(r)
			s := newSampler(zipfWeights(len(pages), 1.0))
			values := make([]string, 1<<16)
			for i := range values {
				values[i] = pages[s.draw(r)]
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				d.Add(Page, values[i&(len(values)-1)], 1, 0)
			}
		})
	}
}

func BenchmarkAddVisitor(b *testing.B) {
	d := NewDay(0)
	r := rand.New(rand.NewPCG(1, 2))
	ids := make([]uint32, 1<<16)
	for i := range ids {
		ids[i] = r.Uint32N(simVisitors)
	}
	for i := 0; b.Loop(); i++ {
		d.AddVisitor(i/(1<<14)%24, ids[i&(len(ids)-1)])
	}
}

func BenchmarkSum(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 3))
	all := make([]*Day, 365)
	for i := range all {
		all[i] = countsDay(r, Date(i))
	}
	for _, n := range []int{30, 365} {
		b.Run(fmt.Sprintf("days=%d", n), func(b *testing.B) {
			days := all[:n]
			var s Sum
			for b.Loop() {
				s.Reset()
				s.Add(Page, days...)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*simPages), "ns/value")
		})
	}
}

// BenchmarkSumYear sums the pages of a year the way a query does: twelve
// month rollups and the days of the current month.
func BenchmarkSumYear(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 6))
	var buckets []*Day
	for m := range 12 {
		month := make([]*Day, 30)
		for i := range month {
			month[i] = countsDay(r, Date(30*m+i))
		}
		buckets = append(buckets, Rollup(month...))
	}
	for i := range 5 {
		buckets = append(buckets, countsDay(r, Date(360+i)))
	}
	var s Sum
	for b.Loop() {
		s.Reset()
		s.Add(Page, buckets...)
	}
}

func BenchmarkUniqueVisitors(b *testing.B) {
	for _, salt := range []struct {
		name   string
		length int // days per salt period
	}{{"day", 1}, {"week", 7}, {"month", 30}} {
		b.Run("days=365/salt="+salt.name, func(b *testing.B) {
			days := make([]*Day, 365)
			for i := range days {
				p := Date(i / salt.length * salt.length)
				d := NewDay(p)
				// 100k visitors a day; within a period, a third return
				// the next day and the rest are new.
				first := uint32(i%salt.length) * simVisitors * 2 / 3
				for v := range uint32(simVisitors) {
					d.AddVisitor(int(v%24), first+v)
				}
				d.Compact()
				days[i] = d
			}
			for b.Loop() {
				_ = UniqueVisitors(days...)
			}
		})
	}
}

// BenchmarkMarshal encodes and decodes a simulated day of the large site
// and reports the encoded size per hit, and the heap size per hit of the
// day open and compacted.
func BenchmarkMarshal(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 5))
	d := simulateDay(r, 0)
	open := d.SizeBytes()
	d.Compact()
	hits := float64(d.Pageviews() + d.Events)
	enc, _ := d.MarshalBinary()
	b.Run("op=encode", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = d.AppendBinary(buf[:0])
		}
		b.ReportMetric(float64(len(enc))/hits, "bytes/hit")
		b.ReportMetric(float64(open)/hits, "open-heap-bytes/hit")
		b.ReportMetric(float64(d.SizeBytes())/hits, "heap-bytes/hit")
	})
	b.Run("op=decode", func(b *testing.B) {
		for b.Loop() {
			var out Day
			if err := out.UnmarshalBinary(enc); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(enc)))
	})
}

// TestSimulatedDaySize keeps the size targets honest in plain test runs.
func TestSimulatedDaySize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 333k-pageview day")
	}
	d := simulateDay(rand.New(rand.NewPCG(1, 5)), 0)
	if got := d.Pageviews(); got != simPageviews {
		t.Fatalf("Pageviews() = %d, want %d", got, simPageviews)
	}
	if got := d.Visitors(); got != simVisitors {
		t.Fatalf("Visitors() = %d, want %d", got, simVisitors)
	}
	open := d.SizeBytes()
	d.Compact()
	enc, _ := d.MarshalBinary()
	hits := float64(d.Pageviews() + d.Events)
	t.Logf("pages %d, visits %d, events %d; encoded %d bytes = %.2f bytes/hit; heap open %.2f, compacted %.2f bytes/hit",
		d.Len(Page), d.Visits, d.Events, len(enc), float64(len(enc))/hits, float64(open)/hits, float64(d.SizeBytes())/hits)
	if perHit := float64(len(enc)) / hits; perHit > 4 {
		t.Errorf("encoding takes %.2f bytes/hit, target ≤ 4", perHit)
	}
}
