package cli

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/engine/plausiblezip/plgen"
	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/snapshot"
)

// TestImportPlausibleCmd: webstatsd import -from plausible stores the
// export in the website's imported layer, which the next server start
// answers from; a broken zip exits 1 naming file, line and column and
// stores nothing (SPEC §14).
func TestImportPlausibleCmd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := context.Background()
	var site engine.Website
	err := withEngine(dir, false, func(e *engine.Engine) error {
		a, _, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
		if err != nil {
			return err
		}
		d := "example.com"
		site, err = e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	zip, want := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 5, 1), Days: 20, DailyVisitors: 100, Pages: 4, Cities: 3, Seed: 4})
	good := filepath.Join(t.TempDir(), "example_com_20240521.zip")
	bad := filepath.Join(t.TempDir(), "bad.zip")
	os.WriteFile(good, zip, 0o600)
	os.WriteFile(bad, zip[:len(zip)/3], 0o600)

	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"import", "-data", dir, "-site", "example.com", "-from", "plausible", bad}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "bad.zip: plausible export: not a readable zip") {
		t.Fatalf("bad zip: exit %d, %s", code, &stderr)
	}
	stderr.Reset()
	if code := Main(ctx, []string{"import", "-data", dir, "-site", "example.com", "-from", "plausible", good}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	err = withEngine(dir, true, func(e *engine.Engine) error {
		o := e.Unscoped()
		list, err := o.Imports(ctx, site.ID)
		if err != nil {
			return err
		}
		if len(list) != 1 || list[0].File != "example_com_20240521.zip" || list[0].Rows != want.Rows {
			t.Errorf("imports %+v (want %d rows)", list, want.Rows)
		}
		q, err := engine.ParseQuery([]byte(`{"site_id":"example.com","metrics":["visitors"],"date_range":["2024-05-01","2024-05-31"],"include":{"imports":true}}`))
		if err != nil {
			return err
		}
		res, err := o.Query(ctx, site.ID, q)
		if err != nil {
			return err
		}
		if got := res.Results[0].Metrics[0]; got != int64(want.Total[0]) {
			t.Errorf("visitors %v, want %d", got, want.Total[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", "-data", dir, "-from", "plausible", good},
		{"import", "-data", dir, "-site", "example.com", "-from", "umami-typo", good},
		{"import", "-data", dir, "-site", "example.com", "-from", "plausible"},
	} {
		if code := Main(ctx, args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}

// TestImportPlausibleRemote: with -url and -key the export is uploaded to a
// running server, which answers from it; a broken zip is refused before
// anything is sent.
func TestImportPlausibleRemote(t *testing.T) {
	ctx := context.Background()
	e, err := engine.Open(&engine.Options{FS: snapshot.NewMemFS(), Dir: "data", NoSync: true, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a, key, err := identity.Must(e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	d := "example.com"
	site, err := e.Owner(a.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpd.New(e, &httpd.Options{RateLimit: -1}))
	defer srv.Close()
	zip, want := plgen.Zip(plgen.Options{From: buckets.DateOf(2024, 5, 1), Days: 10, DailyVisitors: 100, Pages: 4, Cities: 3, Seed: 8})
	good := filepath.Join(t.TempDir(), "export.zip")
	bad := filepath.Join(t.TempDir(), "bad.zip")
	os.WriteFile(good, zip, 0o600)
	os.WriteFile(bad, zip[:100], 0o600)
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"import", "-url", srv.URL, "-key", key, "-site", d, "-from", "plausible", bad}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "not a readable zip") {
		t.Fatalf("bad: %d %s", code, &stderr)
	}
	if code := Main(ctx, []string{"import", "-url", srv.URL, "-key", key, "-site", "nope.example", "-from", "plausible", good}, &stdout, &stderr); code != 1 {
		t.Fatalf("unknown site: %d %s", code, &stderr)
	}
	stderr.Reset()
	if code := Main(ctx, []string{"import", "-url", srv.URL, "-key", key, "-site", d, "-from", "plausible", good}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, &stderr)
	}
	list, err := e.Unscoped().Imports(ctx, site.ID)
	if err != nil || len(list) != 1 || list[0].Rows != want.Rows || list[0].File != "export.zip" {
		t.Fatalf("imports %+v %v", list, err)
	}
}
