package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestExport: Owner.Export gives every pageview and custom event of the
// local days asked, day after day in time order, with an opaque visitor
// id the same within a salt period and in every export, never an address
// or user agent, and only to the website's owner (SPEC §14).
func TestExport(t *testing.T) {
	c := newClock("2026-11-21T10:00:00Z")
	e, _ := openMem(t, c)
	w := newSite(t, e, "example.com")
	ua2 := func(h *engine.Hit) { h.UserAgent = firefoxLin }
	// Tracked out of time order: the export is in time order.
	track(t, e,
		pv("2026-11-02T09:00:00Z", "https://example.com/b?x=1"),
		pv("2026-11-01T10:00:00Z", "https://example.com/a", func(h *engine.Hit) { h.Referrer = "https://www.google.com/search?q=1" }),
		pv("2026-11-01T10:05:00Z", "https://example.com/c", ua2),
		pv("2026-11-01T10:10:00Z", "https://example.com/a", func(h *engine.Hit) {
			h.Event = &engine.Event{Name: "Signup", Value: []byte("5"), Unit: "EUR"}
			h.Props = []engine.Prop{{Key: "plan", Value: "pro"}}
		}),
		pv("2026-11-03T09:00:00Z", "https://example.com/d"),
	)
	export := func(o engine.Owner, from, to string) ([]engine.ExportedHit, error) {
		var out []engine.ExportedHit
		err := o.Export(context.Background(), w.ID, date(from), date(to), func(h *engine.ExportedHit) error {
			out = append(out, *h)
			return nil
		})
		return out, err
	}
	got, err := export(e.Unscoped(), "2026-11-01", "2026-11-02")
	if err != nil {
		t.Fatal(err)
	}
	type short struct {
		Time              string
		Path, Referrer    string
		Event             bool
		Name, Value, Unit string
		Browser, Country  string
		Props             []engine.Prop
	}
	var s []short
	for _, h := range got {
		s = append(s, short{h.Time.Format(time.RFC3339), h.Path, h.Referrer, h.Event, h.Name, h.Value, h.Unit, h.Browser, h.Country, h.Props})
	}
	want := []short{
		{"2026-11-01T10:00:00Z", "/a", "www.google.com/search", false, "", "", "", "Chrome", "US", nil},
		{"2026-11-01T10:05:00Z", "/c", "", false, "", "", "", "Firefox", "US", nil},
		{"2026-11-01T10:10:00Z", "/a", "", true, "Signup", "5", "EUR", "Chrome", "US", []engine.Prop{{Key: "plan", Value: "pro"}}},
		{"2026-11-02T09:00:00Z", "/b?x=1", "", false, "", "", "", "Chrome", "US", nil},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("export mismatch (-want +got):\n%s", diff)
	}
	// One visitor id per visitor and salt period (daily salts: a day).
	if got[0].Visitor != got[2].Visitor || got[0].Visitor == got[1].Visitor || got[0].Visitor == got[3].Visitor {
		t.Errorf("visitor ids %q %q %q %q: want the first and third alike, the others not", got[0].Visitor, got[1].Visitor, got[2].Visitor, got[3].Visitor)
	}
	for _, h := range got {
		if strings.Contains(h.Visitor, "8.8.8.8") || strings.Contains(h.Visitor, "Mozilla") || len(h.Visitor) != 16 {
			t.Errorf("visitor id %q: want 16 opaque hex digits", h.Visitor)
		}
	}
	again, _ := export(e.Unscoped(), "2026-11-01", "2026-11-02")
	if again[0].Visitor != got[0].Visitor {
		t.Errorf("a second export gave visitor %q, the first %q", again[0].Visitor, got[0].Visitor)
	}
	// Another account's handle finds nothing to export.
	if _, err := export(e.Owner(9999), "2026-11-01", "2026-11-30"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("another account's export: %v, want ErrNotFound", err)
	}
	// An error of fn stops the export and is returned.
	stop := errors.New("stop")
	n := 0
	err = e.Unscoped().Export(context.Background(), w.ID, date("2026-11-01"), date("2026-11-30"), func(*engine.ExportedHit) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("Export with a failing fn: %v after %d hits, want stop after 1", err, n)
	}
}
