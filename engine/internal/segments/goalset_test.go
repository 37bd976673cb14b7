package segments

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/webstats/webstats/engine/query"
)

func TestGoalSetWithWithout(t *testing.T) {
	var s *GoalSet
	g, bad := CheckGoal(query.Goal{EventName: " Signup ", Currency: "eur"})
	if bad != nil {
		t.Fatalf("CheckGoal: %v", bad)
	}
	s, _, p := s.With(g, 2)
	if p != nil || len(s.Goals) != 1 || s.Goals[0].ID != 1 || s.Goals[0].DisplayName != "Signup" || s.Goals[0].Currency != "EUR" {
		t.Fatalf("first goal: %+v, %v", s, p)
	}
	if next, found, p := s.With(g, 2); next != nil || p != nil || found.ID != 1 {
		t.Errorf("the same goal again: %v, %+v, %v; want it found", next, found, p)
	}
	taken, _ := CheckGoal(query.Goal{PagePath: "/x", DisplayName: "Signup"})
	if _, _, p := s.With(taken, 2); p == nil || p.Field != "display_name" {
		t.Errorf("a taken display name: %v", p)
	}
	p2, _ := CheckGoal(query.Goal{PagePath: "/x"})
	s, _, _ = s.With(p2, 2)
	p3, _ := CheckGoal(query.Goal{PagePath: "/y"})
	if _, _, p := s.With(p3, 2); p == nil || p.Field != "goal" {
		t.Errorf("past max goals: %v", p)
	}
	next, ok := s.Without(1)
	if !ok || len(next.Goals) != 1 || next.Goals[0].ID != 2 || next.Next != 2 {
		t.Errorf("without 1: %+v, %v", next, ok)
	}
	if _, ok := next.Without(1); ok {
		t.Error("goal 1 deleted twice")
	}
}

func TestCheckGoal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		goal   query.Goal
		fields []string
	}{
		{name: "neither", goal: query.Goal{}, fields: []string{"goal"}},
		{name: "both", goal: query.Goal{EventName: "a", PagePath: "/a"}, fields: []string{"goal"}},
		{name: "relative path", goal: query.Goal{PagePath: "a"}, fields: []string{"page_path"}},
		{name: "currency on a page goal", goal: query.Goal{PagePath: "/a", Currency: "USD"}, fields: []string{"currency"}},
		{name: "bad currency", goal: query.Goal{EventName: "a", Currency: "US"}, fields: []string{"currency"}},
		{name: "fine", goal: query.Goal{PagePath: "/a/*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bad := CheckGoal(tc.goal)
			var fields []string
			for _, b := range bad {
				fields = append(fields, b.Field)
			}
			if diff := cmp.Diff(tc.fields, fields); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
