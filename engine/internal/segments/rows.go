package segments

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/webstats/webstats/engine/query"
)

func (p *Plan) Rows() []*Row {
	out := make([]*Row, 0, len(p.order))
	for _, g := range p.order {
		if !g.hasRows {
			continue
		}
		out = append(out, p.Row(g))
	}
	return out
}

func (p *Plan) Row(g *Group) *Row {
	visitors := g.solo
	for _, bm := range g.visitors {
		visitors += int64(bm.GetCardinality())
	}
	o := &Row{Dims: g.Dims, Visitors: visitors, g: g, Metrics: make([]any, len(p.Query.Metrics))}
	for i, m := range p.Query.Metrics {
		o.Metrics[i] = p.metric(m, g, visitors)
	}
	return o
}

func (p *Plan) metric(m string, g *Group, visitors int64) any {
	switch m {
	case "visitors":
		return visitors
	case "visits":
		return g.visits
	case "pageviews":
		return g.pageviews
	case "events":
		return g.events
	case "views_per_visit":
		if g.sess.N == 0 {
			return 0.0
		}
		return round(float64(g.sess.Pageviews)/float64(g.sess.N), 2)
	case "bounce_rate":
		if g.sess.BounceN == 0 {
			return int64(0)
		}
		return int64(math.Round(100 * float64(g.sess.Bounced) / float64(g.sess.BounceN)))
	case "visit_duration":
		if g.sess.N == 0 {
			return nil
		}
		return int64(math.Round(float64(g.sess.Duration) / float64(g.sess.N)))
	case "time_on_page":
		if g.engN == 0 {
			return nil
		}
		return int64(math.Round(float64(g.engMs) / 1000 / float64(g.engN)))
	case "scroll_depth":
		if g.scrollN == 0 {
			return nil
		}
		return int64(math.Round(float64(g.scrollSum) / float64(g.scrollN)))
	case "total_revenue", "average_revenue":
		if _, warned := p.Warnings[m]; warned {
			return nil
		}
		if gi := p.goalDimIndex(); gi >= 0 && g.Dims != nil && !p.isRevenueGoal(g.Dims[gi]) {
			return nil // the row's goal has no currency
		}
		cur := g.revCurrency
		if gi := p.goalDimIndex(); gi >= 0 && g.Dims != nil {
			for _, i := range p.revGoals {
				if p.Goals.Goals[i].DisplayName == g.Dims[gi] {
					cur = p.Goals.Goals[i].Currency
				}
			}
		}
		if cur == "" && len(p.revGoals) > 0 {
			cur = p.Goals.Goals[p.revGoals[0]].Currency
		}
		v := float64(g.revenue) / 1e6
		if m == "average_revenue" {
			v = 0
			if g.revenueN > 0 {
				v = float64(g.revenue) / 1e6 / float64(g.revenueN)
			}
		}
		return formatRevenue(round(v, 3), cur)
	}
	return nil // percentage and conversion rates: filled in by runQuery
}

// goalDimIndex is the position of the event:goal dimension, or -1.
func (p *Plan) goalDimIndex() int {
	return slices.IndexFunc(p.dims, func(s dimSpec) bool { return s.kind == dkGoal })
}

// isRevenueGoal reports whether the goal of display name v is in the
// revenue scope.
func (p *Plan) isRevenueGoal(v any) bool {
	for _, gi := range p.revGoals {
		if p.Goals.Goals[gi].DisplayName == v {
			return true
		}
	}
	return false
}

// SortRows orders rows by the query's order_by, then by the dimension
// values ascending, then by their order before (as a stable sort would);
// only the first n need to be in their final place: a page of the top
// rows of a query by page is chosen among tens of thousands.
func (p *Plan) SortRows(rows []*Row, n int) {
	type key struct {
		metric int // index in metrics, or -1
		dim    int
		desc   bool
	}
	var keys []key
	for _, o := range p.Query.OrderBy {
		k := key{metric: slices.Index(p.Query.Metrics, o.Key), dim: slices.Index(p.Query.Dimensions, o.Key), desc: o.Desc}
		keys = append(keys, k)
	}
	for j := range p.Query.Dimensions {
		keys = append(keys, key{metric: -1, dim: j})
	}
	for i, o := range rows {
		o.pos = i
	}
	cmpRow := func(a, b *Row) int {
		for _, k := range keys {
			var c int
			if k.metric >= 0 {
				c = compareValues(a.Metrics[k.metric], b.Metrics[k.metric])
			} else if k.dim >= 0 {
				c = compareValues(a.Dims[k.dim], b.Dims[k.dim])
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return cmp.Compare(a.pos, b.pos)
	}
	SortFirst(rows, n, cmpRow)
}

// compareValues orders row values: nil first, numbers numerically,
// strings bytewise, revenue by value.
func compareValues(a, b any) int {
	if a == nil || b == nil {
		switch {
		case a == nil && b == nil:
			return 0
		case a == nil:
			return -1
		}
		return 1
	}
	num := func(v any) (float64, bool) {
		switch x := v.(type) {
		case int64:
			return float64(x), true
		case float64:
			return x, true
		case *query.Revenue:
			return x.Value, true
		}
		return 0, false
	}
	if x, ok := num(a); ok {
		if y, ok := num(b); ok {
			return cmp.Compare(x, y)
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			return strings.Compare(x, y) // the common case, without fmt
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// formatRevenue is a revenue metric's value: the amount with Plausible's
// short ("$96.3M") and long ("$96,336,315.00") forms.
func formatRevenue(v float64, currency string) *query.Revenue {
	sym, ok := currencySymbols[currency]
	if !ok {
		sym = currency + " "
	}
	long := sym + groupThousands(strconv.FormatFloat(v, 'f', 2, 64))
	short := long
	abs := math.Abs(v)
	for _, u := range []struct {
		n float64
		s string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if abs >= u.n {
			short = sym + strconv.FormatFloat(round(v/u.n, 1), 'f', -1, 64) + u.s
			break
		}
	}
	return &query.Revenue{Value: v, Currency: currency, Short: short, Long: long}
}

var currencySymbols = map[string]string{"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "CNY": "CN¥", "CAD": "CA$", "AUD": "A$", "BRL": "R$", "KRW": "₩", "CHF": "CHF "}

// groupThousands puts commas in the integer part of a decimal string.
func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}
