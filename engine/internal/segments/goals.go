package segments

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/webstats/webstats/engine/internal/norm"
	"github.com/webstats/webstats/engine/query"
)

// GoalSet is the goals of one website, as stored (snapshot.KindGoals, one
// JSON record a website). It is immutable: a change stores and publishes a
// new set.
type GoalSet struct {
	Next  uint64       `json:"next"` // the last id given
	Goals []query.Goal `json:"goals"`

	pages []*regexp.Regexp // compiled PagePath of each goal; nil for event goals
}

// Compile builds the path matchers of the pageview goals.
func (g *GoalSet) Compile() error {
	g.pages = make([]*regexp.Regexp, len(g.Goals))
	for i, goal := range g.Goals {
		if goal.PagePath == "" {
			continue
		}
		re, err := pagePathRegexp(goal.PagePath)
		if err != nil {
			return err
		}
		g.pages[i] = re
	}
	return nil
}

// pagePathRegexp is the anchored matcher of a pageview goal's path: "*"
// and "**" match any run of characters (plausible-api.md §6.5).
func pagePathRegexp(path string) (*regexp.Regexp, error) {
	parts := strings.Split(strings.ReplaceAll(path, "**", "*"), "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.Compile("^" + strings.Join(parts, ".*") + "$")
}

// Bounds of a goal's fields, in characters.
const (
	maxGoalName = 120
	maxGoalPath = 2000
)

// Problem is what is wrong with one field of a goal, in the words of the
// API's 422 answers.
type Problem struct{ Field, Msg string }

// CheckGoal returns a new goal g trimmed, its event name as the segments
// keep it, its currency upper-case and its display name defaulted, with
// what is wrong with its fields (none: nil).
func CheckGoal(g query.Goal) (query.Goal, []Problem) {
	g.ID = 0
	g.EventName = strings.TrimSpace(g.EventName)
	g.PagePath = strings.TrimSpace(g.PagePath)
	g.DisplayName = strings.TrimSpace(g.DisplayName)
	g.Currency = strings.ToUpper(strings.TrimSpace(g.Currency))
	var bad []Problem
	add := func(field, msg string) { bad = append(bad, Problem{field, msg}) }
	switch {
	case (g.EventName == "") == (g.PagePath == ""):
		add("goal", "exactly one of event_name and page_path is required")
	case g.EventName != "":
		// The name as the segments keep it, ':' kept (SPEC §2.4):
		// "Outbound Link: Click" matches Plausible's trackers' events.
		if name, ok := norm.EventNameExact(g.EventName); !ok || utf8.RuneCountInString(g.EventName) > maxGoalName {
			add("event_name", "must be 1 to 120 characters")
		} else {
			g.EventName = name
		}
	case !strings.HasPrefix(g.PagePath, "/") || utf8.RuneCountInString(g.PagePath) > maxGoalPath || !utf8.ValidString(g.PagePath):
		add("page_path", "must start with / and be at most 2000 characters")
	}
	if g.Currency != "" && (g.PagePath != "" || !isCurrency(g.Currency)) {
		add("currency", "must be a 3-letter ISO 4217 code, on an event goal")
	}
	if g.DisplayName == "" {
		if g.EventName != "" {
			g.DisplayName = g.EventName
		} else {
			g.DisplayName = "Visit " + g.PagePath
		}
	}
	if utf8.RuneCountInString(g.DisplayName) > maxGoalPath+6 || !utf8.ValidString(g.DisplayName) {
		add("display_name", "must be at most 2006 characters")
	}
	return g, bad
}

// With returns the set with g (CheckGoal's) added under the next id, or
// nil and the goal of the set that g's event name or page path finds
// (find or create), or what is wrong: g's display name is taken, or the
// set has max goals already. s may be nil (no goals yet).
func (s *GoalSet) With(g query.Goal, max int) (next *GoalSet, found query.Goal, bad *Problem) {
	if s == nil {
		s = &GoalSet{}
	}
	for _, x := range s.Goals {
		if g.EventName != "" && x.EventName == g.EventName || g.PagePath != "" && x.PagePath == g.PagePath {
			return nil, x, nil
		}
		if x.DisplayName == g.DisplayName {
			return nil, query.Goal{}, &Problem{"display_name", "has already been taken"}
		}
	}
	if len(s.Goals) >= max {
		return nil, query.Goal{}, &Problem{"goal", fmt.Sprintf("a website has at most %d goals", max)}
	}
	g.ID = s.Next + 1
	return &GoalSet{Next: g.ID, Goals: append(slices.Clone(s.Goals), g)}, query.Goal{}, nil
}

// Without returns the set without the goal of id; ok=false when s (nil:
// no goals) has none of id.
func (s *GoalSet) Without(id uint64) (next *GoalSet, ok bool) {
	if s == nil {
		return nil, false
	}
	i := slices.IndexFunc(s.Goals, func(g query.Goal) bool { return g.ID == id })
	if i < 0 {
		return nil, false
	}
	return &GoalSet{Next: s.Next, Goals: slices.Delete(slices.Clone(s.Goals), i, i+1)}, true
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
