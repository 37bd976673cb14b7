package jetstream_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/plausiblezip"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
)

// TestClusterRefusesImport: in cluster mode an import of Plausible's
// export is refused with ErrImportCluster (the imported layer is not
// replicated yet: nodes would answer differently), and nothing is stored
// (README, "Importing Plausible's history").
func TestClusterRefusesImport(t *testing.T) {
	c := startNATS(t, 1)
	clk := &clock{now: bench.DefaultStart}
	n := openNodeOn(t, c.url(0), "imports", 1, clk, &engine.Options{Dir: t.TempDir(), NoSync: true, SnapshotEvery: -1})
	defer n.close(t)
	id := addSites(t, n.e, "imp.example")[0]
	zip, _ := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 1, 1), Days: 3, DailyVisitors: 10, Pages: 2, Cities: 2, Seed: 1})
	x, err := plausiblezip.Read(bytes.NewReader(zip), int64(len(zip)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.e.Unscoped().ImportPlausible(ctx, id, x, "export.zip"); !errors.Is(err, engine.ErrImportCluster) {
		t.Fatalf("import in cluster mode: %v, want ErrImportCluster", err)
	}
	if list, err := n.e.Unscoped().Imports(ctx, id); err != nil || len(list) != 0 {
		t.Fatalf("imports %v, %v", list, err)
	}
}
