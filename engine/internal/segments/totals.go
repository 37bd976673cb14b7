package segments

type Sess struct {
	N, BounceN, Bounced int64
	Duration            int64 // seconds
	Pageviews           int64
}

// Totals is what a query without filters or dimensions adds to its one
// group for a whole day of one salt period of its own (scanDay's plain),
// session totals included.
type Totals struct {
	Visits, Pageviews, Events, Visitors int64
	Sess                                Sess
	Rows                                bool // visits > 0 || events > 0
}

// Sub subtracts b from t: what a day added.
func (t *Totals) Sub(b *Totals) {
	t.Visits -= b.Visits
	t.Pageviews -= b.Pageviews
	t.Events -= b.Events
	t.Visitors -= b.Visitors
	t.Sess.N -= b.Sess.N
	t.Sess.BounceN -= b.Sess.BounceN
	t.Sess.Bounced -= b.Sess.Bounced
	t.Sess.Duration -= b.Sess.Duration
	t.Sess.Pageviews -= b.Sess.Pageviews
	t.Rows = t.Visits > 0 || t.Events > 0
}
