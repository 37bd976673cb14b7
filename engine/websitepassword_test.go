package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// TestRemoveWebsitePassword: a password-protected website keeps its
// password; once its privacy changed, the password goes, for good (a
// reopened engine has none either), and another account cannot remove it.
func TestRemoveWebsitePassword(t *testing.T) {
	ctx := context.Background()
	c := newClock("2026-11-21T10:00:00Z")
	e, o := openMem(t, c)
	web := newSite(t, e, "example.com", func(in *engine.WebsiteInput) {
		in.Privacy, in.Password = str("2"), str("open sesame")
	})
	own := e.Owner(web.Account)
	stranger, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}

	_, err = own.RemoveWebsitePassword(ctx, web.ID)
	var verr *engine.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("privacy 2: err %v, want a *ValidationError", err)
	}
	want := []engine.FieldError{{Field: "password", Msg: "The password field is required when privacy is 2."}}
	if diff := cmp.Diff(want, verr.Fields); diff != "" {
		t.Errorf("privacy 2: mismatch (-want +got)\n%s", diff)
	}
	if _, err := own.UpdateWebsite(ctx, web.ID, engine.WebsiteInput{Privacy: str("1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Owner(stranger.ID).RemoveWebsitePassword(ctx, web.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("another account: err %v, want ErrNotFound", err)
	}
	if ok, err := e.CheckPassword(ctx, web.ID, "open sesame"); err != nil || !ok {
		t.Fatalf("before: CheckPassword = %v, %v; want true", ok, err)
	}

	c.Add(1e9)
	got, err := own.RemoveWebsitePassword(ctx, web.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.HasPassword() || !got.UpdatedAt.Equal(c.Now()) {
		t.Errorf("after: HasPassword %v, UpdatedAt %v; want false, %v", got.HasPassword(), got.UpdatedAt, c.Now())
	}
	if ok, err := e.CheckPassword(ctx, web.ID, "open sesame"); err != nil || ok {
		t.Errorf("after: CheckPassword = %v, %v; want false", ok, err)
	}
	again, err := own.RemoveWebsitePassword(ctx, web.ID)
	if err != nil || !again.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("no password: %v, UpdatedAt %v; want no change", err, again.UpdatedAt)
	}

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e2, err := engine.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	re, err := e2.Owner(web.Account).Website(ctx, web.ID)
	if err != nil {
		t.Fatal(err)
	}
	if re.HasPassword() || re.Privacy != 1 {
		t.Errorf("reopened: HasPassword %v, privacy %d; want false, 1", re.HasPassword(), re.Privacy)
	}
}
