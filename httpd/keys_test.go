package httpd

import (
	"context"
	"github.com/webstats/webstats/engine/identity"
	"net/http"
	"testing"
)

// TestEveryKeyAuthenticates: each of an account's keys opens the
// phpAnalytics and the Plausible API; a revoked key and the keys of a
// disabled account answer 401 (SPEC §11).
func TestEveryKeyAuthenticates(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	info, second, err := identity.Must(f.e).CreateKey(ctx, f.aliceID, "CI")
	if err != nil {
		t.Fatal(err)
	}
	plausible := `{"site_id":"example.com","metrics":["visitors"],"date_range":"all"}`
	call := func(key string) (v1, v2 int) {
		v1 = f.do(request{method: http.MethodGet, path: "/api/v1/account", key: key}).Code
		v2 = f.do(request{method: http.MethodPost, path: "/api/v2/query", key: key, ctype: "application/json", body: plausible}).Code
		return v1, v2
	}
	for name, key := range map[string]string{"first": f.alice, "second": second} {
		if v1, v2 := call(key); v1 != http.StatusOK || v2 != http.StatusOK {
			t.Errorf("%s key: v1 %d, v2 %d; want 200, 200", name, v1, v2)
		}
	}
	if err := identity.Must(f.e).RevokeKey(ctx, f.aliceID, info.ID); err != nil {
		t.Fatal(err)
	}
	if v1, v2 := call(second); v1 != http.StatusUnauthorized || v2 != http.StatusUnauthorized {
		t.Errorf("revoked key: v1 %d, v2 %d; want 401, 401", v1, v2)
	}
	ad, err := identity.Must(f.e).Admin(f.aliceID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ad.SetDisabled(ctx, f.bobID, true); err != nil {
		t.Fatal(err)
	}
	if v1, _ := call(f.bob); v1 != http.StatusUnauthorized {
		t.Errorf("disabled account's key: v1 %d, want 401", v1)
	}
}
