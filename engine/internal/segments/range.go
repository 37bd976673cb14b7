package segments

import (
	"time"

	"github.com/webstats/webstats/buckets"
)

// Which hits a query's range holds (SPEC §10.1): over whole local days, the
// hits counted under those days, whatever their times; over a sub-day range
// (24h, datetimes), the hits whose times are in it.

// inRange reports whether hit i of the current day sd is in the range: by
// its day over whole days, by its time over a sub-day range.
func (p *Plan) inRange(sd *Day, i int) bool {
	if p.ByDay {
		d := p.hitDay(sd, i)
		return d >= p.firstDay && d <= p.lastDay
	}
	sec := FloorDiv(sd.HMs[i], 1000)
	return sec >= p.from && sec <= p.to
}

// hitDay returns the local day hit i of the current day sd was counted
// under (SPEC §10.1, §2.3: fixed when counted, in the time zone then in
// force): the day its flags say. A hit written before hits kept their day
// has the current day, unless its visit passed midnight since its first
// hit (read in today's time zone: weekly and monthly salts). Under daily
// salts a visit's hits are all of its salt period's one day, the current
// one (its row's period is that day): read in another time zone since, a
// visit that crosses the new zone's midnight stays on its day.
func (p *Plan) hitDay(sd *Day, i int) buckets.Date {
	if d, ok := flagDay(sd.HFlags[i]); ok {
		return p.date + d
	}
	v := sd.HVisit[i]
	if v == NoVisit || sd.HMs[i] < p.nextMid || int(v) >= len(sd.VFirst) ||
		p.Daily && sd.VPeriod[v] == int32(p.date) {
		return p.date
	}
	loc := p.Query.Location
	d := buckets.DateFromTime(time.UnixMilli(sd.HMs[i]).In(loc)) - buckets.DateFromTime(time.UnixMilli(sd.VFirst[v]).In(loc))
	return p.date + max(d, 0)
}

// wholeDay reports whether every hit of sd is in the range (most days of
// a range): no per-hit time check is needed then. memo: sd's, if frozen.
func (p *Plan) wholeDay(sd *Day, memo *Memo) bool {
	if p.ByDay {
		if p.date < p.firstDay || p.date > p.lastDay {
			return false
		}
		if p.date-p.firstDay > 32 && p.lastDay-p.date > 32 {
			return true // farther than any hit's day from its visit's
		}
		for i, f := range sd.HFlags {
			if f|HitInteractive == HitDay|HitInteractive {
				continue // on the day itself (the common case)
			}
			if d := p.hitDay(sd, i); d < p.firstDay || d > p.lastDay {
				return false
			}
		}
		return true
	}
	var lo, hi int64
	if memo != nil {
		lo, hi = memo.Span(sd)
	} else {
		lo, hi = hitSpan(sd)
	}
	return FloorDiv(lo, 1000) >= p.from && FloorDiv(hi, 1000) <= p.to
}

// dayLabel returns the id of the time label of a hit counted under local
// day d (time:day, time:week, time:month over whole days).
func (p *Plan) dayLabel(d buckets.Date) uint32 {
	if id, ok := p.dayLabels[d]; ok {
		return id
	}
	label := p.Query.DayBucket(d)
	id, ok := p.labelIDs[label]
	if !ok {
		id = uint32(len(p.labels))
		p.labels = append(p.labels, label)
		p.labelIDs[label] = id
	}
	if p.dayLabels == nil {
		p.dayLabels = make(map[buckets.Date]uint32)
	}
	p.dayLabels[d] = id
	return id
}
