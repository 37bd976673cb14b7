package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dchest/siphash"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/ua"
	"github.com/webstats/webstats/snapshot"
)

// Track counts hits: each goes through the drops, the enrichment, the visitor
// numbering and visit detection, and is applied to its day bucket, in the
// order given. Track returns once the counted hits are durable in the log
// (unless Options.NoSync); a hit of a website deleted meanwhile is dropped as
// unknown.
//
// An error means the hits may or may not have been counted: they were not
// acknowledged as durable.
func (e *Engine) Track(ctx context.Context, hits ...Hit) (TrackResult, error) {
	res := TrackResult{Reasons: make([]DropReason, len(hits))}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if !e.enter() {
		return res, ErrClosed
	}
	defer e.exit()
	now := e.now()
	recs := make([]record, len(hits))
	cfgs := make([]*siteConfig, len(hits))
	for i := range hits {
		cfgs[i], res.Reasons[i] = e.enrich(&hits[i], now, &recs[i])
	}
	buf := make([]byte, 0, 256*len(hits))
	entries := make([]snapshot.LogEntry, 0, len(hits))
	for i := range recs {
		if res.Reasons[i] != DropNone {
			continue
		}
		r := &recs[i]
		start := len(buf)
		buf = r.appendBinary(buf)
		seq, err := e.apply(r, cfgs[i].domain)
		if err != nil {
			return res, err
		}
		if seq == 0 {
			res.Reasons[i] = DropUnknownSite
			continue
		}
		entries = append(entries, snapshot.LogEntry{Seq: seq, Data: buf[start:len(buf):len(buf)]})
	}
	for _, r := range res.Reasons {
		if r == DropNone {
			res.Accepted++
		} else {
			res.Dropped[r]++
			e.counters.dropped[r].Add(1)
		}
	}
	if len(entries) > 0 {
		if err := e.store.Append(entries...); err != nil {
			return res, fmt.Errorf("engine: write log: %w", err)
		}
	}
	e.counters.tracked.Add(uint64(res.Accepted))
	return res, nil
}

// apply counts r under its website's shard lock and returns its sequence
// number, or 0 when the website is gone.
func (e *Engine) apply(r *record, domain string) (uint64, error) {
	e.regMu.RLock()
	s := e.sites[r.website]
	e.regMu.RUnlock()
	if s == nil {
		return 0, nil
	}
	sh := e.shardOf(r.website)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := s.state
	if st.deleted {
		return 0, nil
	}
	seq := e.seq.Add(1)
	if err := e.applyLocked(st, r, domain); err != nil {
		return 0, err
	}
	st.lastSeq = seq
	return seq, nil
}

// enrich runs steps 1 and 2 of the pipeline on h: the drops, then the
// enrichment into r. It needs no lock of the statistics state.
func (e *Engine) enrich(h *Hit, now time.Time, r *record) (*siteConfig, DropReason) {
	cfg := e.lookupSite(h)
	switch {
	case cfg == nil:
		return nil, DropUnknownSite
	case !cfg.ips.Empty() && cfg.ips.Contains(h.IP.Unmap()):
		return cfg, DropExcludedIP
	}
	ag := e.ua.Parse(h.UserAgent)
	// An import without a user agent (a visitor id instead) is not a bot:
	// like the header heuristics, that rule is for live requests.
	uaBot := ag.Bot && (h.Live || h.UserAgent != "")
	if cfg.excludeBots && (uaBot || (h.Live && (strings.TrimSpace(h.Language) == "" || ua.HeadlessHint(h.SecCHUA)))) {
		return cfg, DropBot
	}
	if h.Prefetch {
		return cfg, DropPrefetch
	}
	pg, ok := norm.ParsePage(h.URL, cfg.rules)
	if !ok {
		return cfg, DropInvalid
	}
	t := h.Time
	if t.IsZero() {
		t = now
	}
	lt := t.In(cfg.loc)
	r.website = cfg.id
	r.date = buckets.DateFromTime(lt)
	r.hour = uint8(lt.Hour())
	r.period = periodStart(r.date, e.opts.SaltPeriod)
	r.ms = t.UnixMilli()
	if h.Event != nil {
		name, ok := norm.EventName(h.Event.Name)
		if !ok {
			return cfg, DropInvalid
		}
		r.event = true
		r.eventRow = norm.EventRow(name, norm.EventValue(h.Event.Value), norm.EventUnit(h.Event.Unit))
	}
	salt, err := e.salt(r.period)
	if err != nil {
		e.opts.Logger.Error("salt", "err", err)
	}
	r.hash = visitorHash(salt, cfg.id, h)
	if r.event {
		return cfg, DropNone // an event counts only under event
	}
	r.page = pg.Page
	r.campaign = pg.Campaign
	r.refHost = norm.ReferrerHost(h.Referrer)
	r.browser, r.os, r.device = ag.Browser, ag.OS, ag.Device
	r.resolution = norm.Resolution(h.Resolution)
	r.language = norm.Language(h.Language)
	loc := e.geo.Lookup(h.IP.Unmap())
	r.country, r.continent, r.city = loc.Country, loc.Continent, loc.City
	return cfg, DropNone
}

// lookupSite finds the website of h: by id, by the Plausible domain, or by
// the page URL's host.
func (e *Engine) lookupSite(h *Hit) *siteConfig {
	e.regMu.RLock()
	defer e.regMu.RUnlock()
	if h.Website != 0 {
		if s := e.sites[h.Website]; s != nil {
			return s.cfg.Load()
		}
		return nil
	}
	var host string
	if h.Domain != "" {
		host = norm.PlausibleDomain(h.Domain)
	} else {
		host = norm.Host(urlHost(h.URL))
	}
	id, ok := e.domains[host]
	if !ok {
		return nil
	}
	return e.sites[id].cfg.Load()
}

// urlHost is the host[:port] of an absolute URL, or "".
func urlHost(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return ""
	}
	u = u[i+3:]
	if j := strings.IndexAny(u, "/?#"); j >= 0 {
		u = u[:j]
	}
	if j := strings.LastIndexByte(u, '@'); j >= 0 {
		u = u[j+1:]
	}
	return u
}

// periodStart returns the first day of the salt period holding date.
func periodStart(date buckets.Date, p SaltPeriod) buckets.Date {
	switch p {
	case SaltWeek:
		return date - buckets.Date((int(date.Weekday())+6)%7)
	case SaltMonth:
		y, m, _ := date.Civil()
		return buckets.DateOf(y, m, 1)
	}
	return date
}

// visitorHash is the salted SipHash-2-4 of website ‖ IP ‖ user agent, or of
// website ‖ the explicit visitor string.
func visitorHash(salt [16]byte, website uint32, h *Hit) uint64 {
	k0 := binary.LittleEndian.Uint64(salt[:8])
	k1 := binary.LittleEndian.Uint64(salt[8:])
	var arr [512]byte
	b := binary.LittleEndian.AppendUint32(arr[:0], website)
	if h.Visitor != "" {
		b = append(b, 1)
		b = append(b, h.Visitor...)
	} else {
		ip := h.IP.Unmap().As16()
		b = append(b, 0)
		b = append(b, ip[:]...)
		b = append(b, h.UserAgent...)
	}
	return siphash.Hash(k0, k1, b)
}

// saltKey names a salt: the first day of its period (periods are the same
// days for every website; only where they start in absolute time differs).
type saltKey = buckets.Date

// saltBox holds the salts of recent periods.
type saltBox struct {
	mu sync.RWMutex
	m  map[saltKey][16]byte
}

// salt returns the salt of the period starting on first, creating (and
// storing) a random one the first time.
func (e *Engine) salt(first buckets.Date) ([16]byte, error) {
	e.salts.mu.RLock()
	s, ok := e.salts.m[first]
	e.salts.mu.RUnlock()
	if ok {
		return s, nil
	}
	e.salts.mu.Lock()
	defer e.salts.mu.Unlock()
	if s, ok := e.salts.m[first]; ok {
		return s, nil
	}
	if _, err := io.ReadFull(e.opts.Rand, s[:]); err != nil {
		return s, fmt.Errorf("engine: new salt: %w", err)
	}
	if err := e.store.Put(snapshot.KindSalt, saltID(first), s[:]); err != nil {
		return s, fmt.Errorf("engine: store salt: %w", err)
	}
	e.salts.m[first] = s
	return s, nil
}

func saltID(first buckets.Date) uint64 { return uint64(uint32(first)) }
