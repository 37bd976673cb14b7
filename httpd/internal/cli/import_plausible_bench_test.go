package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

// BenchmarkImportPlausibleYear: Plausible's export of a year of a site with
// 10k daily visitors (300 pages, 300 places a day: some 300,000 daily rows)
// imported offline into a data directory on disk, as webstatsd import does
// it: read, validated, stored durably (issue 40: under 10 s). Each
// iteration imports it once; the import is deleted between iterations.
func BenchmarkImportPlausibleYear(b *testing.B) {
	zip, sums := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 366, DailyVisitors: 10_000, Pages: 300, Cities: 300, Seed: 5})
	file := filepath.Join(b.TempDir(), "example_com_20250101.zip")
	if err := os.WriteFile(file, zip, 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{Dir: filepath.Join(b.TempDir(), "data"), SnapshotEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	a, _, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		b.Fatal(err)
	}
	d := "example.com"
	w, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := importPlausible(ctx, e, d, file, io.Discard); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		list, _ := e.Unscoped().Imports(ctx, w.ID)
		for _, imp := range list {
			if err := e.Unscoped().DeleteImport(ctx, w.ID, imp.ID); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(sums.Rows), "rows")
	b.ReportMetric(float64(len(zip))/1e6, "zipMB")
}
