//go:build race

package engine_test

// raceEnabled: the race detector makes every operation ~10× slower, so the
// randomized tests run a tenth of their seeds under it (the full count runs
// without it in the same CI run).
const raceEnabled = true
