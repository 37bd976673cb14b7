package invalid_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/webstats/webstats/engine/internal/invalid"
)

func TestError(t *testing.T) {
	var e invalid.Error
	if err := e.Err(); err != nil {
		t.Fatalf("empty: Err() = %v, want nil", err)
	}
	e.Add("domain", "The domain field is required.")
	e.Add("privacy", "The selected privacy is invalid.")
	want := "engine: invalid input: domain: The domain field is required.; privacy: The selected privacy is invalid."
	if got := e.Err().Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var as *invalid.Error
	if !errors.As(fmt.Errorf("create: %w", e.Err()), &as) || len(as.Fields) != 2 {
		t.Errorf("errors.As through a wrap: %v", as)
	}
	if got := invalid.Of("to", "x").Error(); got != "engine: invalid input: to: x" {
		t.Errorf("Of: %q", got)
	}
}
