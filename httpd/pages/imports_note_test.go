package pages

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

// TestOverviewImportsNote: the overview says when its range holds imported
// history it leaves out (SPEC §14: "the dashboard says when its view
// leaves it out"), and says nothing without imports.
func TestOverviewImportsNote(t *testing.T) {
	f := newFixture(t)
	c := f.client()
	get := func() string {
		t.Helper()
		res := c.get("/stats/public.example")
		if res.status != http.StatusOK {
			t.Fatalf("status %d", res.status)
		}
		return res.body
	}
	if body := get(); strings.Contains(body, `id="imports-note"`) {
		t.Fatalf("a note without imports: %s", mainText(body))
	}
	today := engine.DateFromTime(testNow)
	zip, _ := plgen.Zip(plgen.Options{From: today - 90, Days: 91, DailyVisitors: 20, Pages: 2, Cities: 2, Seed: 1})
	x, err := plausiblezip.Read(bytes.NewReader(zip), int64(len(zip)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Owner(f.owner.ID).ImportPlausible(context.Background(), f.public.ID, x, "export.zip"); err != nil {
		t.Fatal(err)
	}
	body := get()
	if !strings.Contains(body, `id="imports-note"`) || !strings.Contains(mainText(body), "Imported data (") ||
		!strings.Contains(mainText(body), "is not included in this view") {
		t.Fatalf("no note: %s", mainText(body))
	}
}
