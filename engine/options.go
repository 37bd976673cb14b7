package engine

import (
	"fmt"

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/salts"
)

// SaltPeriod is how long a visitor-hash salt lives: a visitor is the same
// visitor only inside one salt period (package salts). Its String is
// "day", "week" or "month".
type SaltPeriod = salts.Period

// The salt periods. Periods start at local midnight, on Monday, or on the 1st
// in each website's time zone, so a local day never spans two periods.
const (
	SaltDay   = salts.Day
	SaltWeek  = salts.Week
	SaltMonth = salts.Month
)

// ParseSaltPeriod parses "day", "week" or "month".
func ParseSaltPeriod(s string) (SaltPeriod, error) {
	if p, ok := salts.ParsePeriod(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("engine: salt period %q: want day, week or month", s)
}

// Options configures an Engine (package config documents each field and
// its default). The zero value is valid: an in-memory engine.
type Options = config.Options

// DefaultMaxValues is the default of Options.MaxValues.
const DefaultMaxValues = config.DefaultMaxValues
