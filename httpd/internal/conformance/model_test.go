package conformance

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// The reference: what Plausible answers for the hits a test caused,
// computed here from the list of those hits by Plausible's documented rules
// (/work/shared/plausible-api.md §2 and §6, the SPEC §10.1 visit rule),
// never from webstats' answers.

// hit is one event a client was made to send.
type hit struct {
	visitor string
	name    string            // "pageview" or the custom event's name, as sent
	page    string            // the pathname Plausible records (with the #fragment under hash routing)
	props   map[string]string // custom properties
	revenue float64           // amount in the revenue goal's currency; 0: none
	nonInt  bool              // sent with interactive: false
	at      time.Time         // when (imports); browser hits are in sending order
	country string            // ISO code of the visitor's IP, "" when unknown
	browser string            // Plausible's label of the visitor's browser
	os      string            // Plausible's label of the visitor's OS
}

// model is the hits of one website, in time order.
type model []hit

// visit is one session: Plausible's rule (any hit more than 30 minutes after
// the visitor's previous one starts a visit; every hit extends it).
type visit struct {
	hits     []hit
	bounce   bool
	duration time.Duration
}

func (m model) visits() []visit {
	by := map[string][]hit{}
	var order []string
	for _, h := range m {
		if _, ok := by[h.visitor]; !ok {
			order = append(order, h.visitor)
		}
		by[h.visitor] = append(by[h.visitor], h)
	}
	var out []visit
	for _, v := range order {
		hs := by[v]
		start := 0
		for i := 1; i <= len(hs); i++ {
			if i == len(hs) || hs[i].at.Sub(hs[i-1].at) > 30*time.Minute {
				out = append(out, newVisit(hs[start:i]))
				start = i
			}
		}
	}
	return out
}

// newVisit: a visit bounces unless a hit after its first is a pageview or
// an interactive custom event; its duration is last hit − first hit.
func newVisit(hs []hit) visit {
	v := visit{hits: hs, bounce: true, duration: hs[len(hs)-1].at.Sub(hs[0].at)}
	for _, h := range hs[1:] {
		if h.name == "pageview" || !h.nonInt {
			v.bounce = false
		}
	}
	return v
}

// filter returns the hits for which keep is true.
func (m model) filter(keep func(hit) bool) model {
	var out model
	for _, h := range m {
		if keep(h) {
			out = append(out, h)
		}
	}
	return out
}

func (m model) visitors() int {
	seen := map[string]bool{}
	for _, h := range m {
		seen[h.visitor] = true
	}
	return len(seen)
}

func (m model) count(name string) int {
	return len(m.filter(func(h hit) bool { return h.name == name }))
}

func (m model) revenue() float64 {
	var sum float64
	for _, h := range m {
		sum += h.revenue
	}
	return math.Round(sum*1000) / 1000
}

// aggregate is visitors, visits, pageviews, events, bounce_rate and
// visit_duration (integer percent and seconds, rounded) of every hit.
func (m model) aggregate() []any {
	vs := m.visits()
	var bounces int
	var dur time.Duration
	for _, v := range vs {
		if v.bounce {
			bounces++
		}
		dur += v.duration
	}
	rate, mean := 0.0, 0.0
	if len(vs) > 0 {
		rate = math.Round(100 * float64(bounces) / float64(len(vs)))
		mean = math.Round(dur.Seconds() / float64(len(vs)))
	}
	return []any{float64(m.visitors()), float64(len(vs)), float64(m.count("pageview")), float64(len(m)), rate, mean}
}

// groupBy splits the hits by a key; hits whose key is not ok are left out.
func (m model) groupBy(key func(hit) (string, bool)) map[string]model {
	out := map[string]model{}
	for _, h := range m {
		if k, ok := key(h); ok {
			out[k] = append(out[k], h)
		}
	}
	return out
}

// breakdown is groupBy with metrics per group, in the shape server.query
// returns.
func (m model) breakdown(key func(hit) (string, bool), metrics func(model) []any) map[string][]any {
	out := map[string][]any{}
	for k, g := range m.groupBy(key) {
		out[k] = metrics(g)
	}
	return out
}

// visitorsEvents is the metrics [visitors, events].
func visitorsEvents(g model) []any { return []any{float64(g.visitors()), float64(len(g))} }

// v1Rows turns a breakdown into Plausible v1's rows: the property's key
// and "visitors", ordered by visitors desc, then the value.
func v1Rows(key string, groups map[string]model) []any {
	type kv struct {
		k string
		n int
	}
	var rows []kv
	for k, g := range groups {
		rows = append(rows, kv{k, g.visitors()})
	}
	slices.SortFunc(rows, func(a, b kv) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.k, b.k))
	})
	var out []any
	for _, r := range rows {
		out = append(out, map[string]any{key: r.k, "visitors": float64(r.n)})
	}
	return out
}
