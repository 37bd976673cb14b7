package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// chart is a line chart over categorical x values, drawn as SVG by hand.
type chart struct {
	title, xLabel, yLabel string
	xs                    []string // the x categories, left to right
	series                []series
	yFormat               func(float64) string
}

// series is one line of a chart; NaN values are gaps.
type series struct {
	name string
	ys   []float64
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

// niceStep returns a round tick step for a range of span over about n ticks.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// svg renders the chart.
func (c *chart) svg() []byte {
	const (
		w, h                  = 640, 360
		left, right, top, bot = 80, 170, 40, 56
	)
	pw, ph := float64(w-left-right), float64(h-top-bot)
	top_ := 0.0
	for _, s := range c.series {
		for _, y := range s.ys {
			if !math.IsNaN(y) {
				top_ = max(top_, y)
			}
		}
	}
	step := niceStep(top_*1.05, 5)
	ymax := math.Max(step, math.Ceil(top_*1.05/step)*step)
	yf := c.yFormat
	if yf == nil {
		yf = func(v float64) string { return formatCount(v) }
	}
	xAt := func(i int) float64 {
		if len(c.xs) == 1 {
			return left + pw/2
		}
		return left + pw*float64(i)/float64(len(c.xs)-1)
	}
	yAt := func(v float64) float64 { return top + ph*(1-v/ymax) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.title))
	for v := 0.0; v <= ymax+step/2; v += step {
		y := yAt(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", left, y, left+pw, y)
		label := yf(v)
		if step < 1 {
			// Enough decimals for the step (0.025 needs three).
			prec := int(math.Ceil(-math.Log10(step))) + 1
			label = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', prec, 64), "0"), ".")
		}
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, esc(label))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333333"/>`+"\n", left, top, left, top+ph)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333333"/>`+"\n", left, top+ph, left+pw, top+ph)
	for i, x := range c.xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xAt(i), top+ph+18, esc(x))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, h-10, esc(c.xLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", top+ph/2, top+ph/2, esc(c.yLabel))
	for si, s := range c.series {
		col := palette[si%len(palette)]
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i, y := range s.ys {
			if i >= len(c.xs) {
				break
			}
			if math.IsNaN(y) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(i), yAt(y)))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s</title></circle>`+"\n", xAt(i), yAt(y), col, esc(s.name), esc(yf(y)))
		}
		flush()
		ly := top + 10 + 20*si
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", left+pw+14, ly, left+pw+34, ly, col)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", left+pw+40, ly+4, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
