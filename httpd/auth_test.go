package httpd

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// TestUnavailableAnswers checks that the engine's passing failures answer
// 503 with Retry-After, not 500: engine.ErrBusy (too many password hashes
// at once) and a full disk (SPEC §13: tracking answers 503 while the log
// cannot be written).
func TestUnavailableAnswers(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		retry string
	}{
		{"busy", fmt.Errorf("create: %w", engine.ErrBusy), "2"},
		{"disk full", fmt.Errorf("engine: log: %w", snapshot.ErrDiskFull), "10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			writeError(w, httptest.NewRequest("POST", "/api/event", nil), tt.err)
			if w.Code != 503 || w.Header().Get("Retry-After") != tt.retry {
				t.Errorf("status %d, Retry-After %q; want 503 with Retry-After %s", w.Code, w.Header().Get("Retry-After"), tt.retry)
			}
		})
	}
}
