package bench

import "math"

// Capacity is the capacity model: what a deployment needs, from measured
// costs per hit and stated assumptions.
//
//	hits kept   = websites × pageviews/month × HitsPerPageview × RetentionDays/30
//	RAM         = (FixedRAM + hits kept × MemBytesPerHit) × Headroom
//	disk        = (FixedDisk + hits kept × DiskBytesPerHit) × Headroom
//	peak rate   = websites × pageviews/month × RequestsPerPageview / (30 × 86,400 s) × PeakFactor
//	cores       = ⌈peak rate × Headroom / HitsPerSecPerCore⌉, at least 1
//
// A day bucket keeps counts per distinct value, so the cost per hit falls as
// a site grows: Sizes, when not empty, gives the costs measured per site
// size, and a deployment takes those of the size nearest to its
// pageviews/month (on a log scale; the costlier on a tie).
type Capacity struct {
	// MemBytesPerHit and DiskBytesPerHit are the measured heap and data
	// directory bytes per counted hit of a long history, used when Sizes
	// is empty.
	MemBytesPerHit, DiskBytesPerHit float64
	// Sizes are the costs per hit by site size.
	Sizes []SizeCost
	// FixedRAM and FixedDisk are the engine's fixed memory and data
	// directory, in bytes.
	FixedRAM, FixedDisk float64
	// HitsPerSecPerCore is the measured tracking rate of one core.
	HitsPerSecPerCore float64
	// PeakFactor is the busiest hour's rate over the average rate.
	PeakFactor float64
	// HitsPerPageview counts the hits kept per human pageview (custom
	// events come on top; bots are dropped); RequestsPerPageview the
	// tracking requests served per human pageview (bots included).
	HitsPerPageview, RequestsPerPageview float64
	// RetentionDays is how many days of history are kept.
	RetentionDays int
	// Headroom multiplies every need: room for growth, bursts beyond the
	// diurnal peak, compactions and the page cache.
	Headroom float64
}

// SizeCost is the cost per hit of a site of PageviewsPerMonth pageviews a
// month.
type SizeCost struct {
	PageviewsPerMonth               int
	MemBytesPerHit, DiskBytesPerHit float64
}

// cost returns the memory and disk bytes per hit for sites of
// pageviewsPerMonth.
func (c Capacity) cost(pageviewsPerMonth int) (mem, disk float64) {
	mem, disk = c.MemBytesPerHit, c.DiskBytesPerHit
	best := math.Inf(1)
	for _, s := range c.Sizes {
		d := math.Abs(math.Log(float64(max(1, pageviewsPerMonth))) - math.Log(float64(max(1, s.PageviewsPerMonth))))
		switch {
		case d < best-1e-9:
			best, mem, disk = d, s.MemBytesPerHit, s.DiskBytesPerHit
		case math.Abs(d-best) <= 1e-9:
			mem, disk = max(mem, s.MemBytesPerHit), max(disk, s.DiskBytesPerHit)
		}
	}
	return mem, disk
}

// Plan is what Capacity.Plan gives for a deployment.
type Plan struct {
	Websites          int
	PageviewsPerMonth int
	// HitsKept is the hits kept over the retention.
	HitsKept float64
	// PeakPerSec is the tracking requests per second of the busiest hour.
	PeakPerSec float64
	RAMGiB     float64
	DiskGiB    float64
	Cores      int
}

const gib = 1 << 30

// Plan returns the needs of websites websites of pageviewsPerMonth
// pageviews a month each.
func (c Capacity) Plan(websites, pageviewsPerMonth int) Plan {
	pv := float64(websites) * float64(pageviewsPerMonth)
	p := Plan{Websites: websites, PageviewsPerMonth: pageviewsPerMonth}
	p.HitsKept = pv * c.HitsPerPageview * float64(c.RetentionDays) / 30
	p.PeakPerSec = pv * c.RequestsPerPageview / (30 * 86400) * c.PeakFactor
	mem, disk := c.cost(pageviewsPerMonth)
	p.RAMGiB = (c.FixedRAM + p.HitsKept*mem) * c.Headroom / gib
	p.DiskGiB = (c.FixedDisk + p.HitsKept*disk) * c.Headroom / gib
	p.Cores = 1
	if c.HitsPerSecPerCore > 0 {
		p.Cores = max(1, int(math.Ceil(p.PeakPerSec*c.Headroom/c.HitsPerSecPerCore)))
	}
	return p
}

// DefaultCapacity returns the model's assumptions of the generated traffic
// (PeakFactor, bot and event shares), a year's retention and a headroom of
// 2, with the targets' costs per hit (8 bytes of memory, 4 of disk), 64 MiB
// of fixed memory, 8 MiB of fixed disk and 100,000 hits/s a core; Report.Capacity replaces the
// costs by measured ones.
func DefaultCapacity() Capacity {
	return Capacity{
		MemBytesPerHit:      8,
		DiskBytesPerHit:     4,
		FixedRAM:            64 << 20,
		FixedDisk:           8 << 20,
		HitsPerSecPerCore:   100_000,
		PeakFactor:          PeakFactor(),
		HitsPerPageview:     1 + DefaultEventShare,
		RequestsPerPageview: (1 + DefaultEventShare) / (1 - DefaultBotShare),
		RetentionDays:       365,
		Headroom:            2,
	}
}

// CapacityRows are the deployments the report plans for: websites and
// pageviews a month each.
var CapacityRows = [][2]int{
	{1, 10_000},
	{1000, 10_000},
	{100, 100_000},
	{10, 1_000_000},
	{1, 10_000_000},
	{10, 10_000_000},
}
