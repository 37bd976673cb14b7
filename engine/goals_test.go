package engine_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/go-cmp/cmp"

	"github.com/webstats/webstats/engine"
)

// goalsSite opens an engine with one website for a goals test.
func goalsSite(t *testing.T, o engine.Options) (*sut, uint32) {
	t.Helper()
	s, err := openSUT(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.close() })
	id, err := s.createSite("example.com", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return s, id
}

func TestGoals(t *testing.T) {
	ctx := context.Background()
	s, id := goalsSite(t, engine.Options{Dir: "data", FS: vfs.NewMem()})
	me := s.e.Owner(s.account)

	signup, err := me.AddGoal(ctx, id, engine.Goal{EventName: "Signup"})
	if err != nil {
		t.Fatal(err)
	}
	blog, err := me.AddGoal(ctx, id, engine.Goal{PagePath: "/blog**"})
	if err != nil {
		t.Fatal(err)
	}
	buy, err := me.AddGoal(ctx, id, engine.Goal{EventName: "Purchase", Currency: "usd", DisplayName: "Buy"})
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.Goal{
		{ID: 1, DisplayName: "Signup", EventName: "Signup"},
		{ID: 2, DisplayName: "Visit /blog**", PagePath: "/blog**"},
		{ID: 3, DisplayName: "Buy", EventName: "Purchase", Currency: "USD"},
	}
	if diff := cmp.Diff(want, []engine.Goal{signup, blog, buy}); diff != "" {
		t.Errorf("created goals (-want +got):\n%s", diff)
	}
	// Find or create: the same event name gives the existing goal.
	again, err := me.AddGoal(ctx, id, engine.Goal{EventName: "Signup", DisplayName: "Other"})
	if err != nil || again != signup {
		t.Errorf("AddGoal of an existing event = %+v, %v; want %+v", again, err, signup)
	}
	for _, bad := range []engine.Goal{
		{},                                         // neither
		{EventName: "A", PagePath: "/a"},           // both
		{PagePath: "blog"},                         // no leading slash
		{PagePath: "/x", Currency: "USD"},          // currency on a page goal
		{EventName: "Pay", Currency: "dollar"},     // not ISO 4217
		{EventName: "Another", DisplayName: "Buy"}, // name taken
	} {
		var verr *engine.ValidationError
		if _, err := me.AddGoal(ctx, id, bad); !errors.As(err, &verr) {
			t.Errorf("AddGoal(%+v) = %v, want a validation error", bad, err)
		}
	}
	// Another account sees nothing of them.
	other, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.e.Owner(other.ID).Goals(ctx, id); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("another account's Goals: %v, want ErrNotFound", err)
	}
	if _, err := s.e.Owner(other.ID).AddGoal(ctx, id, engine.Goal{EventName: "X"}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("another account's AddGoal: %v, want ErrNotFound", err)
	}
	if err := s.e.Owner(other.ID).DeleteGoal(ctx, id, blog.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("another account's DeleteGoal: %v, want ErrNotFound", err)
	}

	if err := me.DeleteGoal(ctx, id, blog.ID); err != nil {
		t.Fatal(err)
	}
	if err := me.DeleteGoal(ctx, id, blog.ID); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("second DeleteGoal: %v, want ErrNotFound", err)
	}
	// Kept across a restart; ids never reused.
	if err := s.reopen(); err != nil {
		t.Fatal(err)
	}
	me = s.e.Owner(s.account)
	got, err := me.Goals(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]engine.Goal{want[0], want[2]}, got); diff != "" {
		t.Errorf("goals after reopen (-want +got):\n%s", diff)
	}
	next, err := me.AddGoal(ctx, id, engine.Goal{PagePath: "/pricing"})
	if err != nil || next.ID != 4 {
		t.Errorf("a goal after a delete and a reopen: %+v, %v; want id 4", next, err)
	}
	// Gone with the website.
	if err := s.deleteSite(id); err != nil {
		t.Fatal(err)
	}
	if err := s.reopen(); err != nil {
		t.Fatal(err)
	}
	id2, err := s.createSite("example.com", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.e.Owner(s.account).Goals(ctx, id2); err != nil || len(got) != 0 {
		t.Errorf("goals of a new website of the same domain: %v, %v; want none", got, err)
	}
}

func TestGoalsBounded(t *testing.T) {
	ctx := context.Background()
	s, id := goalsSite(t, engine.Options{})
	me := s.e.Owner(s.account)
	for i := range engine.MaxGoals {
		if _, err := me.AddGoal(ctx, id, engine.Goal{EventName: "E" + strconv.Itoa(i)}); err != nil {
			t.Fatalf("goal %d: %v", i, err)
		}
	}
	var verr *engine.ValidationError
	if _, err := me.AddGoal(ctx, id, engine.Goal{EventName: "one too many"}); !errors.As(err, &verr) {
		t.Errorf("goal %d: %v, want a validation error", engine.MaxGoals+1, err)
	}
}
