package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/httpd"
	"github.com/webstats/webstats/snapshot"
)

// TestImportURLChunkWithinBodyLimit: a chunk is one POST of at most
// 10 MiB (SPEC §3.4), but chunks0 bounds it in lines only: 5,000 valid
// events of 3.1 KB (a prop of 2,000 characters) with the default -chunk
// are one 15 MB body, refused 413 after the check pass said every line
// was good. Worse, the state file then pins that chunk size on every
// later run ("going on with the first run's … lines a chunk").
func TestImportURLChunkWithinBodyLimit(t *testing.T) {
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
	h, err := httpd.New(e, &httpd.Options{RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	pad := strings.Repeat("x", 2000)
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, `{"time":"2026-10-01T10:%02d:00Z","page":"/p%d/%s","visitor":"v%d","props":{"pad":%q}}`+"\n", i%60, i%7, pad[:1000], i%13, pad)
	}
	file := filepath.Join(t.TempDir(), "lines.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(ctx, []string{"import", "-url", srv.URL, "-key", key, "-site", d, "-from", "ndjson", "-quiet", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("import of %d bytes in the default chunks: exit %d: %s", b.Len(), code, &stderr)
	}
	tot, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: site.ID, Name: "pageviews", From: engine.DateOf(2026, 10, 1), To: engine.DateOf(2026, 10, 1)})
	if err != nil || len(tot.Rows) != 1 || tot.Rows[0].Count != 5000 {
		t.Errorf("pageviews %+v (%v), want 5000", tot.Rows, err)
	}
}
