package httpd

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/webstats/webstats/engine"
)

// TestBusyAnswer checks that engine.ErrBusy (too many password hashes at
// once) answers 503 with Retry-After, not 500.
func TestBusyAnswer(t *testing.T) {
	w := httptest.NewRecorder()
	writeError(w, httptest.NewRequest("POST", "/api/v1/websites", nil), fmt.Errorf("create: %w", engine.ErrBusy))
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
}
