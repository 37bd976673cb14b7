package segments

import (
	"regexp"
	"strings"

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
