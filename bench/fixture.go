package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/webstats/webstats/engine"
)

// fixture is a history loaded into an engine on disk: the sites of the
// query run over their days, shared by the query and restart runs.
type fixture struct {
	dir   string
	e     *engine.Engine
	clock *clock
	key   string
	// sites are the websites loaded, by name ("small", "medium", "large",
	// "large-year").
	sites []fixtureSite
	days  int
	// first and last are the first and last days loaded (UTC).
	first, last time.Time
	load        time.Duration
	hits        int // counted
}

// fixtureSite is one website of a fixture.
type fixtureSite struct {
	Name  string
	Site  Site
	ID    uint32
	Days  int // the last Days days of the fixture have data
	Hits  int // counted
	Scale string
}

func (f *fixture) site(name string) (fixtureSite, bool) {
	for _, s := range f.sites {
		if s.Name == name {
			return s, true
		}
	}
	return fixtureSite{}, false
}

// largeFullDays is how many days of the large site a fixture loads at full
// volume: a year of it is 130M hits, too many to load for a benchmark.
const largeFullDays = 30

// fixtureDays is the history length of the fixture.
func fixtureDays(c *RunConfig) int { return max(1, slices.Max(c.QueryDays)) }

func fixtureSteps(c *RunConfig) int { return (fixtureDays(c) + 29) / 30 }

// fixtureSites lists the sites a fixture loads, with their days.
func fixtureSites(c *RunConfig) []fixtureSite {
	days := fixtureDays(c)
	var out []fixtureSite
	for _, size := range []string{"small", "medium", "large"} {
		if !slices.Contains(c.QuerySites, size) {
			continue
		}
		s, _ := siteBySize(size)
		if size != "large" || days <= largeFullDays {
			out = append(out, fixtureSite{Name: size, Site: s, Days: days})
			continue
		}
		out = append(out, fixtureSite{Name: size, Site: s, Days: largeFullDays})
		scaled := Site{
			Domain:            "large-year.example",
			PageviewsPerMonth: int(float64(Large.PageviewsPerMonth) * c.LargeYearScale),
			PagesPerDay:       Large.PagesPerDay,
			VisitorsPerDay:    max(1, int(float64(Large.VisitorsPerDay)*c.LargeYearScale)),
		}
		out = append(out, fixtureSite{Name: "large-year", Site: scaled, Days: days,
			Scale: fmt.Sprintf("%.0f%% of the large site's traffic, its %d pages a day", 100*c.LargeYearScale, Large.PagesPerDay)})
	}
	return out
}

// buildFixture loads the fixture of r.cfg, once.
func (r *runner) buildFixture(ctx context.Context) (*fixture, error) {
	if r.fix != nil {
		return r.fix, nil
	}
	c := &r.cfg
	days := fixtureDays(c)
	sites := fixtureSites(c)
	f := &fixture{dir: r.newDir("history"), days: days, sites: sites}
	f.first = DefaultStart
	f.last = DefaultStart.AddDate(0, 0, days-1)
	f.clock = newClock(f.first)
	var err error
	f.e, err = engine.Open(&engine.Options{Dir: f.dir, NoSync: true, SnapshotEvery: -1, QueryCache: -1, Now: f.clock.fn()})
	if err != nil {
		return nil, err
	}
	r.fix = f
	var domains []string
	var genSites []Site
	for _, s := range sites {
		domains = append(domains, s.Site.Domain)
		genSites = append(genSites, s.Site)
	}
	_, key, ids, err := setup(ctx, f.e, domains...)
	if err != nil {
		return nil, err
	}
	f.key = key
	for i := range f.sites {
		f.sites[i].ID = ids[f.sites[i].Site.Domain]
	}
	g := NewGenerator(Config{Seed: c.Seed + 2, Sites: genSites, Days: days})
	start := time.Now()
	for day := range days {
		if day%30 == 0 {
			r.prog.step("query: loading %d days of history (day %d)", days, day+1)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f.clock.set(f.first.AddDate(0, 0, day).Add(23*time.Hour + 59*time.Minute))
		for i, s := range f.sites {
			if day < days-s.Days {
				continue
			}
			n, err := trackBatches(ctx, f.e, g.Day(day, i), 1000)
			if err != nil {
				return nil, err
			}
			f.sites[i].Hits += n
			f.hits += n
		}
		if day%7 == 6 {
			if err := f.e.Snapshot(ctx); err != nil {
				return nil, err
			}
		}
	}
	// The next morning: every loaded day is closed, as yesterday's is.
	f.clock.set(f.last.AddDate(0, 0, 1).Add(time.Hour))
	if err := f.e.Snapshot(ctx); err != nil {
		return nil, err
	}
	f.load = time.Since(start)
	return f, nil
}

func (r *runner) closeFixture() {
	if r.fix != nil {
		if r.fix.e != nil {
			r.fix.e.Close()
		}
		removeAll(r.fix.dir)
		r.fix = nil
	}
}

// dateRange returns the engine dates of the last days days of f.
func (f *fixture) dateRange(days int) (from, to string) {
	return f.last.AddDate(0, 0, 1-days).Format(time.DateOnly), f.last.Format(time.DateOnly)
}

// statQuery returns the query of name over the last days days of site.
func (f *fixture) statQuery(site fixtureSite, name string, days int) (engine.StatQuery, error) {
	fromS, toS := f.dateRange(days)
	from, err := engine.ParseDate(fromS)
	if err != nil {
		return engine.StatQuery{}, err
	}
	to, err := engine.ParseDate(toS)
	if err != nil {
		return engine.StatQuery{}, err
	}
	return engine.StatQuery{Website: site.ID, Name: name, From: from, To: to, SortBy: "count", PerPage: 10}, nil
}
