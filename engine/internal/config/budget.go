package config

// MaxSealBytes is the most segment rows of an open day before the engine
// asks for an early snapshot to seal them (SealBytes without a budget).
const MaxSealBytes = 8 << 20

// SealBytes is, for a memory budget (Options.MemoryBudget), the segment
// rows of an open day past which the engine asks for an early snapshot: a
// sixteenth of the budget, at most MaxSealBytes.
func SealBytes(budget int64) int {
	if budget <= 0 {
		return MaxSealBytes
	}
	return int(min(max(budget/16, 1), MaxSealBytes))
}
