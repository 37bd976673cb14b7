package pages

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUploadChunkBytesBounded: a chunk of an upload is counted as one
// import request (Options.ImportLines: decoded, its records built and
// logged at once), so it must be bounded in bytes as POST
// /websites/{id}/events is (10 MiB), not only in lines: lines of up to
// 1 MiB (peerimport.MaxLine), and valid events of 70 KB (30 props of
// 2,000 characters), made a chunk of 5,000 lines as large as the whole
// 256 MiB upload. Here 400 lines of 40 KiB, 16 MiB in all.
func TestUploadChunkBytesBounded(t *testing.T) {
	const importBody = 10 << 20
	pad := strings.Repeat("x", 40<<10)
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, `{"time":"2026-11-20T10:00:00Z","page":"/p%d","visitor":"v","props":{"pad":%q}}`+"\n", i, pad)
	}
	path := filepath.Join(t.TempDir(), "big.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	lines, chunks := 0, 0
	err := eachChunk("ndjson", []upload{{"big.ndjson", path}}, func(body []byte, where []at) error {
		chunks++
		lines += len(where)
		if len(body) > importBody {
			t.Errorf("chunk %d: %d lines, %d bytes, want at most %d bytes", chunks, len(where), len(body), importBody)
		}
		return nil
	})
	if err != nil || lines != 400 {
		t.Fatalf("eachChunk: %d lines, %v", lines, err)
	}
}
