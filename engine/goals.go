package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
)

// Bounds of a goal's fields, in characters.
const (
	maxGoalName = 120
	maxGoalPath = 2000
)

func (o Owner) goals(ctx context.Context, website uint32) ([]Goal, error) {
	if _, err := o.site(website); err != nil {
		return nil, err
	}
	o.e.regMu.RLock()
	defer o.e.regMu.RUnlock()
	s, ok := o.e.sites[website]
	if !ok {
		return nil, ErrNotFound
	}
	if s.goals == nil {
		return []Goal{}, nil
	}
	return slices.Clone(s.goals.Goals), nil
}

func (o Owner) addGoal(ctx context.Context, website uint32, g Goal) (Goal, error) {
	e := o.e
	if !e.enter() {
		return Goal{}, ErrClosed
	}
	defer e.exit()
	g, verr := checkGoal(g)
	if len(verr.Fields) > 0 {
		return Goal{}, verr
	}
	var out Goal
	err := e.regDo(ctx, func() error {
		s, ok := e.sites[website]
		if !ok || !o.owns(s.web) {
			return ErrNotFound
		}
		old := s.goals
		if old == nil {
			old = &segments.GoalSet{}
		}
		for _, x := range old.Goals {
			if g.EventName != "" && x.EventName == g.EventName || g.PagePath != "" && x.PagePath == g.PagePath {
				out = x // find or create
				return nil
			}
			if x.DisplayName == g.DisplayName {
				verr.add("display_name", "has already been taken")
				return verr
			}
		}
		if len(old.Goals) >= MaxGoals {
			verr.add("goal", fmt.Sprintf("a website has at most %d goals", MaxGoals))
			return verr
		}
		next := &segments.GoalSet{Next: old.Next + 1, Goals: append(slices.Clone(old.Goals), g)}
		g := g
		g.ID = next.Next
		next.Goals[len(next.Goals)-1] = g
		if err := e.putGoalsLocked(s, website, next); err != nil {
			return err
		}
		out = g
		return nil
	})
	if err != nil {
		return Goal{}, err
	}
	return out, nil
}

// checkGoal returns a new goal g trimmed, its event name as the segments
// keep it, its currency upper-case and its display name defaulted, with
// the errors of its fields (none: verr.Fields is empty).
func checkGoal(g Goal) (Goal, *ValidationError) {
	g.ID = 0
	g.EventName = strings.TrimSpace(g.EventName)
	g.PagePath = strings.TrimSpace(g.PagePath)
	g.DisplayName = strings.TrimSpace(g.DisplayName)
	g.Currency = strings.ToUpper(strings.TrimSpace(g.Currency))
	verr := &ValidationError{}
	switch {
	case (g.EventName == "") == (g.PagePath == ""):
		verr.add("goal", "exactly one of event_name and page_path is required")
	case g.EventName != "":
		// The name as the segments keep it, ':' kept (SPEC §2.4):
		// "Outbound Link: Click" matches Plausible's trackers' events.
		if name, ok := norm.EventNameExact(g.EventName); !ok || utf8.RuneCountInString(g.EventName) > maxGoalName {
			verr.add("event_name", "must be 1 to 120 characters")
		} else {
			g.EventName = name
		}
	case !strings.HasPrefix(g.PagePath, "/") || utf8.RuneCountInString(g.PagePath) > maxGoalPath || !utf8.ValidString(g.PagePath):
		verr.add("page_path", "must start with / and be at most 2000 characters")
	}
	if g.Currency != "" && (g.PagePath != "" || !isCurrency(g.Currency)) {
		verr.add("currency", "must be a 3-letter ISO 4217 code, on an event goal")
	}
	if g.DisplayName == "" {
		if g.EventName != "" {
			g.DisplayName = g.EventName
		} else {
			g.DisplayName = "Visit " + g.PagePath
		}
	}
	if utf8.RuneCountInString(g.DisplayName) > maxGoalPath+6 || !utf8.ValidString(g.DisplayName) {
		verr.add("display_name", "must be at most 2006 characters")
	}
	return g, verr
}

func (o Owner) deleteGoal(ctx context.Context, website uint32, id uint64) error {
	e := o.e
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	return e.regDo(ctx, func() error {
		s, ok := e.sites[website]
		if !ok || !o.owns(s.web) || s.goals == nil {
			return ErrNotFound
		}
		i := slices.IndexFunc(s.goals.Goals, func(g Goal) bool { return g.ID == id })
		if i < 0 {
			return ErrNotFound
		}
		next := &segments.GoalSet{Next: s.goals.Next, Goals: slices.Delete(slices.Clone(s.goals.Goals), i, i+1)}
		return e.putGoalsLocked(s, website, next)
	})
}

// putGoalsLocked stores and publishes a website's new goals. regMu is held.
func (e *Engine) putGoalsLocked(s *site, website uint32, g *segments.GoalSet) error {
	if err := g.Compile(); err != nil {
		return &ValidationError{Fields: []FieldError{{Field: "page_path", Msg: err.Error()}}}
	}
	if err := e.putJSON(snapshot.KindGoals, uint64(website), g); err != nil {
		return err
	}
	s.goals = g
	return nil
}

// loadGoals reads every website's goals at Open; goals of a website that is
// gone are deleted.
func (e *Engine) loadGoals() error {
	var orphans []uint64
	err := e.store.Scan(snapshot.KindGoals, func(id uint64, v []byte) error {
		s, ok := e.sites[uint32(id)]
		if !ok || id > 1<<32-1 {
			orphans = append(orphans, id)
			return nil
		}
		g := new(segments.GoalSet)
		if err := json.Unmarshal(v, g); err != nil || len(g.Goals) > MaxGoals {
			return fmt.Errorf("engine: goals of website %d: %w", id, snapshot.ErrCorrupt)
		}
		if err := g.Compile(); err != nil {
			return fmt.Errorf("engine: goals of website %d: %w", id, snapshot.ErrCorrupt)
		}
		s.goals = g
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range orphans {
		if err := e.store.Delete(snapshot.KindGoals, id); err != nil {
			return err
		}
	}
	return nil
}

// isCurrency reports whether s looks like an ISO 4217 code: three upper-case
// ASCII letters.
func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := range 3 {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
