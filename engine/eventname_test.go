package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestStatEventNameAtLimit: the phpAnalytics event statistic keeps the
// name it had before names were kept exactly (SPEC §2.3, §2.4: only there
// does ':' become a space): a name of more than 255 characters is cut
// after its colons are made spaces and trimmed, as before. (Cut first,
// the exact name lost two characters of the statistic's name.)
func TestStatEventNameAtLimit(t *testing.T) {
	now := time.Date(2026, 3, 12, 12, 0, 0, 0, time.UTC)
	e, site := hardEngine(t, vfs.NewMem(), Options{Now: func() time.Time { return now }})
	defer e.Close()
	ctx := context.Background()
	long := strings.Repeat("x", 255)
	h := hardHit(site, now, "a", "https://hard.example/")
	h.Event = &Event{Name: ": " + long}
	if _, err := e.Track(ctx, h); err != nil {
		t.Fatal(err)
	}
	pg, err := e.Unscoped().Stat(ctx, StatQuery{Website: site, Name: "event", From: DateOf(2026, 3, 12), To: DateOf(2026, 3, 12)})
	if err != nil {
		t.Fatal(err)
	}
	if want := long + "::"; len(pg.Rows) != 1 || pg.Rows[0].Value != want {
		t.Errorf("event statistic rows %+v, want one %q", pg.Rows, want)
	}
}
