// Package realtime is a website's realtime window (SPEC §13: counted in
// the memory budget and capped; issue #38 row 9): the pageviews of each
// of the last 30 minutes, and the visitors of the last 5 as visitor keys
// a minute, at most SlotKeys distinct ones in a minute's slot.
//
// A slot that fills up is marked over, and Read says so: the caller then
// counts the visitors of those minutes elsewhere (the engine, from the
// segments rows). (Before, every one of 30 slots kept up to 65,536 keys,
// 15.7 MB a website outside the budget, and a minute of more visitors
// than that was undercounted.) A Window is plain data, guarded by its
// owner's lock.
package realtime
