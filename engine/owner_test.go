package engine_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestOwnerScope checks that a handle reaches only its account's websites:
// another account's website, and every website for account 0, is
// ErrNotFound exactly like a missing one; Unscoped reaches them all.
func TestOwnerScope(t *testing.T) {
	ctx := context.Background()
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	alice, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	aliceSite, err := e.Owner(alice.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: str("alice.example")})
	if err != nil {
		t.Fatal(err)
	}
	bobSite, err := e.Owner(bob.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: str("bob.example")})
	if err != nil {
		t.Fatal(err)
	}
	track(t, e, pv("2026-11-21T11:59:00Z", "https://alice.example/"), pv("2026-11-21T11:59:00Z", "https://bob.example/"))
	day := date("2026-11-21")

	// Each call on website w through o; DeleteWebsite is checked apart.
	calls := []struct {
		name string
		call func(o engine.Owner, w engine.Website) error
	}{
		{"Website", func(o engine.Owner, w engine.Website) error { _, err := o.Website(ctx, w.ID); return err }},
		{"WebsiteByDomain", func(o engine.Owner, w engine.Website) error { _, err := o.WebsiteByDomain(ctx, w.Domain); return err }},
		{"UpdateWebsite", func(o engine.Owner, w engine.Website) error {
			_, err := o.UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Timezone: str("UTC")})
			return err
		}},
		{"Stat", func(o engine.Owner, w engine.Website) error {
			_, err := o.Stat(ctx, engine.StatQuery{Website: w.ID, Name: "page", From: day, To: day})
			return err
		}},
		{"Totals", func(o engine.Owner, w engine.Website) error { _, err := o.Totals(ctx, w.ID, day, day); return err }},
		{"Realtime", func(o engine.Owner, w engine.Website) error { _, err := o.Realtime(ctx, w.ID); return err }},
		{"Today", func(o engine.Owner, w engine.Website) error { _, err := o.Today(ctx, w.ID); return err }},
		{"DeleteWebsite", func(o engine.Owner, w engine.Website) error { return o.DeleteWebsite(ctx, w.ID) }},
	}
	denied := []struct {
		name  string
		owner engine.Owner
		site  engine.Website
	}{
		{"account 0 on alice's", e.Owner(0), aliceSite},
		{"account 0 on bob's", e.Owner(0), bobSite},
		{"alice on bob's", e.Owner(alice.ID), bobSite},
		{"bob on alice's", e.Owner(bob.ID), aliceSite},
		{"an unknown account on alice's", e.Owner(99), aliceSite},
	}
	for _, d := range denied {
		for _, c := range calls {
			t.Run(d.name+"/"+c.name, func(t *testing.T) {
				if err := c.call(d.owner, d.site); !errors.Is(err, engine.ErrNotFound) {
					t.Errorf("%s = %v, want ErrNotFound", c.name, err)
				}
			})
		}
	}
	// Nothing denied was changed or deleted; each owner and Unscoped reach
	// their websites with every call but DeleteWebsite, which comes last.
	allowed := []struct {
		name  string
		owner engine.Owner
		site  engine.Website
	}{
		{"alice on hers", e.Owner(alice.ID), aliceSite},
		{"bob on his", e.Owner(bob.ID), bobSite},
		{"unscoped on alice's", e.Unscoped(), aliceSite},
		{"unscoped on bob's", e.Unscoped(), bobSite},
	}
	for _, a := range allowed {
		for _, c := range calls[:len(calls)-1] {
			t.Run(a.name+"/"+c.name, func(t *testing.T) {
				if err := c.call(a.owner, a.site); err != nil {
					t.Errorf("%s = %v, want nil", c.name, err)
				}
			})
		}
	}

	domains := func(o engine.Owner) []string {
		var out []string
		for _, w := range o.Websites(ctx, engine.WebsiteQuery{SortBy: "domain"}).Websites {
			out = append(out, w.Domain)
		}
		return out
	}
	lists := []struct {
		name  string
		owner engine.Owner
		want  []string
	}{
		{"account 0", e.Owner(0), nil},
		{"alice", e.Owner(alice.ID), []string{"alice.example"}},
		{"bob", e.Owner(bob.ID), []string{"bob.example"}},
		{"unscoped", e.Unscoped(), []string{"alice.example", "bob.example"}},
	}
	for _, l := range lists {
		t.Run("Websites/"+l.name, func(t *testing.T) {
			if diff := cmp.Diff(l.want, domains(l.owner)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// (An id no account has is refused once identity is attached:
	// identity's TestCreateWebsiteUnknownAccount.)
	t.Run("CreateWebsite without an account", func(t *testing.T) {
		for name, o := range map[string]engine.Owner{"account 0": e.Owner(0), "unscoped": e.Unscoped()} {
			if _, err := o.CreateWebsite(ctx, engine.WebsiteInput{Domain: str(name + ".example")}); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("%s: CreateWebsite = %v, want ErrNotFound", name, err)
			}
		}
	})

	if err := e.Owner(alice.ID).DeleteWebsite(ctx, aliceSite.ID); err != nil {
		t.Errorf("alice deletes hers: %v", err)
	}
	if err := e.Unscoped().DeleteWebsite(ctx, bobSite.ID); err != nil {
		t.Errorf("unscoped deletes bob's: %v", err)
	}
	if got := domains(e.Unscoped()); len(got) != 0 {
		t.Errorf("websites after deleting both: %v", got)
	}
}

// TestRangeValidation checks the errors of a bad range, for Stat and Totals
// alike: each says what is wrong, and a range whose length overflows int32
// is refused rather than scanned forever.
func TestRangeValidation(t *testing.T) {
	c := newClock("2026-11-21T12:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	day := date("2026-11-21")
	const (
		after   = "The to must be a date after or equal to from."
		tooLong = "The range must not be longer than 36525 days."
	)
	tests := []struct {
		name     string
		from, to engine.Date
		want     []engine.FieldError // nil: valid
	}{
		{name: "one day", from: day, to: day},
		{name: "the longest range", from: day - engine.MaxRangeDays + 1, to: day},
		{name: "to before from", from: day, to: day - 1, want: []engine.FieldError{{Field: "to", Msg: after}}},
		{name: "one day too long", from: day - engine.MaxRangeDays, to: day, want: []engine.FieldError{{Field: "to", Msg: tooLong}}},
		{name: "every representable day", from: math.MinInt32, to: math.MaxInt32, want: []engine.FieldError{{Field: "to", Msg: tooLong}}},
		{name: "MinInt32 to 0", from: math.MinInt32, to: 0, want: []engine.FieldError{{Field: "to", Msg: tooLong}}},
	}
	for _, tt := range tests {
		check := func(t *testing.T, err error) {
			t.Helper()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			var verr *engine.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if diff := cmp.Diff(tt.want, verr.Fields); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		}
		t.Run("Validate/"+tt.name, func(t *testing.T) {
			q := engine.StatQuery{Website: w.ID, Name: "page", From: tt.from, To: tt.to}
			check(t, q.Validate())
		})
		t.Run("Stat/"+tt.name, func(t *testing.T) {
			_, err := e.Unscoped().Stat(context.Background(), engine.StatQuery{Website: w.ID, Name: "page", From: tt.from, To: tt.to})
			check(t, err)
		})
		t.Run("Totals/"+tt.name, func(t *testing.T) {
			_, err := e.Unscoped().Totals(context.Background(), w.ID, tt.from, tt.to)
			check(t, err)
		})
	}
}
