package engine_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
)

// sut is the engine under test, as the metamorphic and determinism tests use
// it: every call they make into the engine's API goes through here, so that
// an API change touches this file only.
type sut struct {
	opts    engine.Options // Dir, FS and the rest; FS is replaced on a crash
	e       *engine.Engine
	account uint32
}

func openSUT(o engine.Options) (*sut, error) {
	s := &sut{opts: o}
	if err := s.open(); err != nil {
		return nil, err
	}
	a, _, err := engine.NewTestAccount()
	if err != nil {
		s.e.Close()
		return nil, err
	}
	s.account = a.ID
	return s, nil
}

func (s *sut) open() error {
	o := s.opts
	e, err := engine.Open(&o)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	s.e = e
	return nil
}

func (s *sut) createSite(domain, tz string) (uint32, error) {
	w, err := s.e.Owner(s.account).CreateWebsite(context.Background(), engine.WebsiteInput{Domain: &domain, Timezone: &tz})
	return w.ID, err
}

func (s *sut) updateSite(id uint32, set siteSettings) error {
	_, err := s.e.Owner(s.account).UpdateWebsite(context.Background(), id, engine.WebsiteInput{
		Timezone: set.tz, ExcludeParams: set.excludeParams, ExcludeIPs: set.excludeIPs})
	return err
}

func (s *sut) deleteSite(id uint32) error {
	return s.e.Owner(s.account).DeleteWebsite(context.Background(), id)
}

func (s *sut) track(hits []engine.Hit) ([]engine.DropReason, error) {
	res, err := s.e.Track(context.Background(), hits...)
	return res.Reasons, err
}

func (s *sut) trackOnce(hits []engine.Hit, key string) (engine.TrackResult, error) {
	return s.e.TrackOnce(context.Background(), key, hits...)
}

func (s *sut) stat(q modelQuery) (statPage, error) {
	sortBy := "count"
	if q.byValue {
		sortBy = "value"
	}
	p, err := s.e.Owner(s.account).Stat(context.Background(), engine.StatQuery{
		Website: q.site, Name: q.name, From: engineDate(q.from), To: engineDate(q.to),
		Search: q.search, SortBy: sortBy, Asc: !q.desc, Page: q.page, PerPage: q.perPage})
	return statPage{Rows: p.Rows, Total: p.Total, Page: p.Page, PerPage: p.PerPage, LastPage: p.LastPage}, err
}

// rows returns every row of a statistic over [from, to].
func (s *sut) rows(site uint32, name string, from, to civil) (map[string]uint64, error) {
	p, err := s.stat(modelQuery{site: site, name: name, from: from, to: to, perPage: 1 << 30})
	if err != nil {
		return nil, err
	}
	m := make(map[string]uint64, len(p.Rows))
	for _, r := range p.Rows {
		m[r.Value] = r.Count
	}
	return m, nil
}

func (s *sut) totals(site uint32, from, to civil) (engine.Totals, error) {
	return s.e.Owner(s.account).Totals(context.Background(), site, engineDate(from), engineDate(to))
}

func (s *sut) snapshot() error { return s.e.Snapshot(context.Background()) }

func (s *sut) close() error { return s.e.Close() }

// reopen closes the engine and opens it again on the same files.
func (s *sut) reopen() error {
	if err := s.e.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return s.open()
}

// crash simulates a power loss: the engine is reopened on a crash clone of
// its file system (what was synced, and cfg's share of what was not). The old
// engine is closed on the old file system, which is then forgotten.
func (s *sut) crash(cfg vfs.CrashCloneCfg) error {
	clone := s.opts.FS.(*vfs.MemFS).CrashClone(cfg)
	s.e.Close() // writes to the old file system only
	s.opts.FS = clone
	return s.open()
}

// engineDate is c as the engine's API takes a day.
func engineDate(c civil) buckets.Date {
	d, err := engine.ParseDate(c.String())
	if err != nil {
		panic(err)
	}
	return d
}

// segQueries are segment queries (SPEC §10.2) whose answers a run of the
// determinism and metamorphic tests compares: filters, visit and event
// dimensions, session metrics and time buckets.
var segQueries = []string{
	`{"metrics":["visitors","visits","pageviews","events","views_per_visit","bounce_rate","visit_duration"]}`,
	`{"metrics":["visitors","visits","bounce_rate"],"dimensions":["visit:source","visit:country"]}`,
	`{"metrics":["visitors","pageviews","bounce_rate","visit_duration"],"dimensions":["event:page"],"filters":[["is_not","visit:device",["Mobile"]]]}`,
	`{"metrics":["visitors","events"],"dimensions":["time:day","event:name"]}`,
	`{"metrics":["visits","visit_duration"],"dimensions":["visit:entry_page","visit:exit_page"],"filters":[["has_done",["contains","event:page",["a"]]]]}`,
	`{"metrics":["visitors","percentage"],"dimensions":["visit:browser"],"filters":[["or",[["is","visit:os",["Windows"]],["not",["matches","event:page",["^/b"]]]]]]}`,
}

// segAnswers runs segQueries over [from, to] of site, as JSON rows.
func (s *sut) segAnswers(site uint32, domain string, from, to civil) (map[string]uint64, error) {
	out := map[string]uint64{}
	for i, body := range segQueries {
		body = fmt.Sprintf(`{"site_id":%q,"date_range":[%q,%q],%s`, domain, from.String(), to.String(), body[1:])
		q, err := engine.ParseQuery([]byte(body))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", body, err)
		}
		res, err := s.e.Owner(s.account).Query(context.Background(), site, q)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", body, err)
		}
		b, err := json.Marshal(res.Results)
		if err != nil {
			return nil, err
		}
		out[fmt.Sprintf("q%d %s", i, b)] = 1
	}
	return out, nil
}
