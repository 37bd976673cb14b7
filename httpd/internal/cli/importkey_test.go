package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestImportKeysFollowChunking: a run killed after it counted chunks 0
// to 2 of -chunk 10, whose state file is gone (the file imported again
// from another directory, or the state removed as the "already
// imported" message suggests), is run again with -chunk 20. The keys are
// the content's digest and the chunk's number only, so key 0 of the new
// run, now lines 0 to 19, is answered Repeated by the engine and lines 10
// to 19 are never counted (likewise 40 to 59): every line must count
// exactly once.
func TestImportKeysFollowChunking(t *testing.T) {
	dir := newSiteDir(t)
	var b strings.Builder
	want := map[string]int64{}
	for i := range 100 {
		at := time.Date(2026, 10, 1+i%5, 10, i, 0, 0, time.UTC)
		fmt.Fprintf(&b, `{"time":%q,"page":"/p%d","visitor":"v%d"}`+"\n", at.Format(time.RFC3339), i%7, i%13)
		want[at.Format("2006-01-02")]++
	}
	file := filepath.Join(t.TempDir(), "lines.ndjson")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// The killed run: what send counts for chunks 0 to 2 of -chunk 10,
	// with their keys, and no state file saved.
	src := &source{format: "ndjson", files: []string{file}, chunk: 10}
	if err := src.check(); err != nil {
		t.Fatal(err)
	}
	err := withEngine(dir, true, func(e *engine.Engine) error {
		tg := &target{e: e, dir: dir, website: 1}
		i := 0
		return src.chunks0(func(body []byte, _ []at) error {
			if i < 3 {
				if _, err := tg.sendChunk(t.Context(), body, src.id+"-"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
			i++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "-data", dir, "-site", "example.com", "-from", "ndjson", "-chunk", "20", "-quiet", file}
	if _, stderr, code := runCLI(t, t.Context(), nil, args...); code != 0 {
		t.Fatalf("import: %d %s", code, stderr)
	}
	if diff := cmp.Diff(want, stats(t, dir, "pageviews")["pageviews"]); diff != "" {
		t.Errorf("pageviews after the import run again with another -chunk mismatch (-want +got):\n%s", diff)
	}
}
