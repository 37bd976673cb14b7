// Package regtx is the registry transaction of cluster mode: the records
// a change's dry run writes, with what puts memory back after it, the
// message that carries them through the cluster's log, and the node's
// turns, retries and waits for its outcome (Runner).
//
// # How a change becomes a transaction
//
// Every change of the registry (accounts, keys, websites, goals, sessions,
// invitations, reports sent, secrets) goes through the shared log like the
// hits, so that every node applies the same changes in the same order
// (docs/design.md, "Cluster mode"). A node makes one in three steps:
//
//  1. It runs the change as one process does, under the registry lock, but
//     the records it writes are collected in a Tx instead of stored, and
//     what it changed in memory is put back (Tx.Undo) before the lock is
//     released: a dry run, whose result (a website with its id, a key) is
//     kept.
//  2. It publishes the records (Encode) with the registry version the dry
//     run saw: the log position of the last transaction applied.
//  3. Every node's follower applies a transaction (Decode) only if its
//     version is still the registry's: nothing changed since the dry run,
//     so applying its records gives what the dry run computed. If another
//     transaction came first, every node drops it alike, and the node that
//     made it runs the change again on the newer registry. The follower
//     tells the node that waits (Runner.Decided) which it was.
//
// Random and time values are decided by the dry run and travel as data: a
// follower never draws or reads the clock. Secrets travel as their hashes
// only, as they are stored.
//
// The package decides nothing about the records themselves: the engine
// installs them, and its registry lock guards a Tx.
package regtx
