package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/webstats/webstats/engine/internal/segments"
	"github.com/webstats/webstats/snapshot"
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
	g, bad := segments.CheckGoal(g)
	verr := &ValidationError{}
	for _, b := range bad {
		verr.Add(b.Field, b.Msg)
	}
	if len(verr.Fields) > 0 {
		return Goal{}, verr
	}
	var out Goal
	err := e.regDo(ctx, func() error {
		s, ok := e.sites[website]
		if !ok || !o.owns(s.web) {
			return ErrNotFound
		}
		next, found, bad := s.goals.With(g, MaxGoals)
		if bad != nil {
			verr.Add(bad.Field, bad.Msg)
			return verr
		}
		if next == nil {
			out = found // find or create
			return nil
		}
		if err := e.putGoalsLocked(s, website, next); err != nil {
			return err
		}
		out = next.Goals[len(next.Goals)-1]
		return nil
	})
	if err != nil {
		return Goal{}, err
	}
	return out, nil
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
		next, ok := s.goals.Without(id)
		if !ok {
			return ErrNotFound
		}
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
