package segments

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/webstats/webstats/engine/query"
)

// Bounds of a query's regular expressions (matches and matches_not
// filters). RE2 runs in time linear in the input, but its compiled program
// grows with the pattern's repetitions: x{0,1000} is 2,000 instructions,
// some 80 bytes each, so 50 patterns of a few hundred bytes could hold
// hundreds of megabytes for one query. Beyond a bound the query fails with
// a *QueryError whose Limit names it.
const (
	// MaxRegexpLength bounds one pattern, in bytes: 2,000 (as a goal's
	// page path).
	MaxRegexpLength = 2000
	// MaxRegexpProgram bounds the compiled programs of all the patterns of
	// one query, in instructions (regexp/syntax.Prog.Inst): 100,000, some
	// 8 MB.
	MaxRegexpProgram = 100_000
)

// regexpBudget compiles the regular expressions of one query within
// MaxRegexpProgram instructions in all.
type regexpBudget struct {
	insts int // instructions compiled so far
}

// compile compiles pattern as regexp.Compile does, counting its program
// against the budget. The errors are *QueryError.
func (b *regexpBudget) compile(pattern string) (*regexp.Regexp, error) {
	shown := pattern
	if len(shown) > 100 {
		shown = shown[:100] + "…"
	}
	if len(pattern) > MaxRegexpLength {
		return nil, &query.QueryError{Msg: fmt.Sprintf("Invalid filter '%s': a regular expression may be at most %d bytes long.", shown, MaxRegexpLength), Limit: "MaxRegexpLength"}
	}
	invalid := &query.QueryError{Msg: fmt.Sprintf("Invalid filter '%s': invalid regular expression", pattern)}
	tooLarge := &query.QueryError{Msg: fmt.Sprintf("Invalid filter '%s': the regular expressions of a query may compile to at most %d instructions in all; this one is too large (fewer or smaller repetitions).", shown, MaxRegexpProgram), Limit: "MaxRegexpProgram"}
	re, err := syntax.Parse(pattern, syntax.Perl) // regexp.Compile's flags
	if err != nil {
		return nil, invalid
	}
	// Refused before the repetitions are expanded (Simplify), which
	// allocates as much as the program; the program is then counted.
	left := MaxRegexpProgram - b.insts
	if progSize(re) > float64(left) {
		return nil, tooLarge
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, invalid
	}
	if len(prog.Inst) > left {
		return nil, tooLarge
	}
	b.insts += len(prog.Inst)
	r, err := regexp.Compile(pattern)
	if err != nil {
		return nil, invalid
	}
	return r, nil
}

// progSize estimates the instructions of re's compiled program without
// expanding its repetitions: what Simplify and Compile make of each
// operator (float64: nested repetitions can overflow any integer), plus
// the program's own two (fail, match).
func progSize(re *syntax.Regexp) float64 { return nodeSize(re) + 2 }

func nodeSize(re *syntax.Regexp) float64 {
	sub := 0.0
	for _, r := range re.Sub {
		sub += nodeSize(r)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return float64(len(re.Rune))
	case syntax.OpConcat:
		return sub
	case syntax.OpAlternate:
		return sub + float64(len(re.Sub)-1)
	case syntax.OpCapture:
		return sub + 2
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sub + 1
	case syntax.OpRepeat:
		// x{n,m}: n copies, then m-n optional ones (x{n,}: n copies,
		// the last one repeated).
		if re.Max < 0 {
			return float64(max(re.Min, 1))*sub + 1
		}
		return float64(re.Max)*sub + float64(re.Max-re.Min)
	}
	return 1
}
