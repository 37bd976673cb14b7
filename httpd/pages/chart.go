package pages

import (
	"math"
	"strconv"
	"strings"
)

// bucket is one bar of a chart: an hour, a day or a month.
type bucket struct {
	Label     string // short axis label ("3 Nov", "14:00", "Nov 2026")
	Title     string // full name for the hover text
	Visitors  uint64
	Pageviews uint64
}

// chart is an SVG chart of visitors (a line) over pageviews (bars), laid out
// on the server. Coordinates are in the viewBox's units.
type chart struct {
	W, H                     int
	Left, Right, Top, Bottom float64 // the plot area
	Bars                     []rect
	Hits                     []rect // full-height hover targets with Title
	Line                     string // polyline points of the visitors
	CmpLine                  string // the visitors of the range compared with
	Dots                     []point
	YTicks, XTicks           []tick
	Buckets                  []bucket
	Unit                     string // "hour", "day" or "month"
}

type rect struct {
	X, Y, W, H float64
	Title      string
}

type point struct{ X, Y float64 }

type tick struct {
	X, Y  float64
	Label string
}

// r1 rounds to one decimal, to keep the SVG short.
func r1(v float64) float64 { return math.Round(v*10) / 10 }

// niceScale returns the top of a y axis holding most and its step: 1, 2 or 5
// times a power of ten, in about four steps.
func niceScale(most uint64) (top, step uint64) {
	if most == 0 {
		return 4, 1
	}
	raw := float64(most) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	s := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			s = m * mag
			break
		}
	}
	step = max64(1, uint64(s))
	top = (most + step - 1) / step * step
	return top, step
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// newChart lays out bs in a w×h box, with the visitors of cmp (the range
// compared with, bucket by bucket; nil for none) as a second line.
func newChart(bs, cmp []bucket, unit string) *chart {
	c := &chart{W: 960, H: 260, Left: 60, Right: 948, Top: 12, Bottom: 232, Buckets: bs, Unit: unit}
	n := len(bs)
	if n == 0 {
		return c
	}
	var most uint64
	for _, b := range bs {
		most = max64(most, max64(b.Visitors, b.Pageviews))
	}
	cmp = cmp[:min(len(cmp), n)]
	for _, b := range cmp {
		most = max64(most, b.Visitors)
	}
	top, step := niceScale(most)
	plotW, plotH := c.Right-c.Left, c.Bottom-c.Top
	y := func(v uint64) float64 { return c.Bottom - float64(v)/float64(top)*plotH }
	for v := uint64(0); v <= top; v += step {
		c.YTicks = append(c.YTicks, tick{X: c.Left - 8, Y: r1(y(v)), Label: shortInt(v)})
	}
	slot := plotW / float64(n)
	bw := math.Max(1, slot*0.72)
	every := (n + 7) / 8 // at most 8 x labels
	var line, cmpLine strings.Builder
	for i, b := range bs {
		x0 := c.Left + float64(i)*slot
		cx := x0 + slot/2
		if b.Pageviews > 0 {
			c.Bars = append(c.Bars, rect{X: r1(cx - bw/2), Y: r1(y(b.Pageviews)), W: r1(bw), H: r1(c.Bottom - y(b.Pageviews))})
		}
		title := b.Title + ": " + formatInt(b.Visitors) + plural(b.Visitors, " visitor", " visitors") + ", " +
			formatInt(b.Pageviews) + plural(b.Pageviews, " pageview", " pageviews")
		if i < len(cmp) {
			cb := cmp[i]
			title += "; " + cb.Title + ": " + formatInt(cb.Visitors) + plural(cb.Visitors, " visitor", " visitors")
			if i > 0 {
				cmpLine.WriteByte(' ')
			}
			cmpLine.WriteString(strconv.FormatFloat(r1(cx), 'f', -1, 64) + "," + strconv.FormatFloat(r1(y(cb.Visitors)), 'f', -1, 64))
		}
		c.Hits = append(c.Hits, rect{X: r1(x0), Y: c.Top, W: r1(slot), H: plotH, Title: title})
		py := r1(y(b.Visitors))
		if i > 0 {
			line.WriteByte(' ')
		}
		line.WriteString(strconv.FormatFloat(r1(cx), 'f', -1, 64) + "," + strconv.FormatFloat(py, 'f', -1, 64))
		if n <= 45 {
			c.Dots = append(c.Dots, point{r1(cx), py})
		}
		if i%every == 0 {
			c.XTicks = append(c.XTicks, tick{X: r1(cx), Y: c.Bottom + 18, Label: b.Label})
		}
	}
	c.Line, c.CmpLine = line.String(), cmpLine.String()
	return c
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shortInt writes an axis label: 950, 1.2k, 35k, 1.5M.
func shortInt(v uint64) string {
	switch {
	case v >= 1_000_000:
		return trimZero(float64(v)/1e6) + "M"
	case v >= 10_000:
		return strconv.FormatUint(v/1000, 10) + "k"
	case v >= 1000:
		return trimZero(float64(v)/1e3) + "k"
	}
	return strconv.FormatUint(v, 10)
}

func trimZero(f float64) string { return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64) }

// sparkline returns the polyline points of values in a w×h box.
func sparkline(values []uint64, w, h float64) string {
	if len(values) == 0 {
		return ""
	}
	var top uint64 = 1
	for _, v := range values {
		top = max64(top, v)
	}
	var b strings.Builder
	step := w / float64(max(len(values)-1, 1))
	for i, v := range values {
		if i > 0 {
			b.WriteByte(' ')
		}
		x := r1(float64(i) * step)
		y := r1(h - 2 - float64(v)/float64(top)*(h-4))
		b.WriteString(strconv.FormatFloat(x, 'f', -1, 64) + "," + strconv.FormatFloat(y, 'f', -1, 64))
	}
	return b.String()
}
