package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// keyLines writes 100 NDJSON lines, 20 a day over 5 days, lines 0 to 29
// being 6 of each day's, and returns the file and its pageviews a day.
func keyLines(t *testing.T) (string, map[string]int64) {
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
	return file, want
}

// killedRun counts chunks 0 to n-1 of src into dir as send would, with
// their keys, and saves no state file: a run killed after them whose
// state file is gone.
func killedRun(t *testing.T, dir string, src *source, n int) {
	if err := src.check(); err != nil {
		t.Fatal(err)
	}
	err := withEngine(dir, true, func(e *engine.Engine) error {
		tg := &target{e: e, dir: dir, website: 1}
		i := 0
		return src.chunks0(func(body []byte, _ []at) error {
			if i < n {
				if _, err := tg.sendChunk(t.Context(), body, src.key(i)); err != nil {
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
}

// TestImportKeysFollowChunking: a run killed after it counted chunks 0
// to 2 of -chunk 10, whose state file is gone (the file imported again
// from another directory, or the state removed), is run again without
// a state file. With keys of the content's digest and the chunk's number
// only, key 0 of a run with -chunk 20 (lines 0 to 19) was answered
// Repeated and lines 10 to 19 (and 40 to 59) were never counted, while
// the run said they were. A key names its chunking too, so:
//   - the same -chunk sends the same keys: every line counts exactly once;
//   - another -chunk sends other keys: no line is lost, and the killed
//     run's 30 lines count twice (the README's stated limit: exactly once
//     takes the state file, or the same -chunk).
func TestImportKeysFollowChunking(t *testing.T) {
	for _, tt := range []struct {
		chunk string
		extra int64 // pageviews a day counted twice
	}{
		{"10", 0},
		{"20", 6},
	} {
		t.Run("chunk"+tt.chunk, func(t *testing.T) {
			dir := newSiteDir(t)
			file, want := keyLines(t)
			killedRun(t, dir, &source{format: "ndjson", files: []string{file}, chunk: 10, chunkBytes: chunkBytes}, 3)
			args := []string{"import", "-data", dir, "-site", "example.com", "-from", "ndjson", "-chunk", tt.chunk, "-quiet", file}
			if _, stderr, code := runCLI(t, t.Context(), nil, args...); code != 0 {
				t.Fatalf("import: %d %s", code, stderr)
			}
			for d := range want {
				want[d] += tt.extra
			}
			if diff := cmp.Diff(want, stats(t, dir, "pageviews")["pageviews"]); diff != "" {
				t.Errorf("pageviews after the import run again with -chunk %s mismatch (-want +got):\n%s", tt.chunk, diff)
			}
		})
	}
}

// TestImportResumesOldStateFile: a state file written before the byte
// bound (no chunk_bytes) is resumed with its run's chunking and keys (the
// digest and the chunk's number), so the chunk in flight when that run
// was killed, counted but not recorded, is not counted again.
func TestImportResumesOldStateFile(t *testing.T) {
	dir := newSiteDir(t)
	file, want := keyLines(t)
	src := &source{format: "ndjson", files: []string{file}, chunk: 10}
	killedRun(t, dir, src, 4)
	if src.key(3) != src.id+"-3" {
		t.Fatalf("key of an old state file's chunk 3 is %q, want %q", src.key(3), src.id+"-3")
	}
	raw, _ := json.Marshal(map[string]any{"id": src.id, "website": 1, "target": dir, "chunk": 10, "done": 3})
	if err := os.WriteFile(file+".webstats-import", raw, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"import", "-data", dir, "-site", "example.com", "-from", "ndjson", "-quiet", file}
	_, stderr, code := runCLI(t, t.Context(), nil, args...)
	if code != 0 || !strings.Contains(stderr, "resuming after chunk 3") {
		t.Fatalf("import: %d %s", code, stderr)
	}
	if diff := cmp.Diff(want, stats(t, dir, "pageviews")["pageviews"]); diff != "" {
		t.Errorf("pageviews after resuming an old state file mismatch (-want +got):\n%s", diff)
	}
}
