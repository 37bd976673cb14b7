package engine

import (
	"context"
	"errors"
)

var errNotYet = errors.New("engine: segments: not implemented yet")

func (o Owner) query(ctx context.Context, website uint32, q Query) (QueryResult, error) {
	return QueryResult{}, errNotYet
}

func (o Owner) goals(ctx context.Context, website uint32) ([]Goal, error) { return nil, errNotYet }

func (o Owner) addGoal(ctx context.Context, website uint32, g Goal) (Goal, error) {
	return Goal{}, errNotYet
}

func (o Owner) deleteGoal(ctx context.Context, website uint32, id uint64) error { return errNotYet }
