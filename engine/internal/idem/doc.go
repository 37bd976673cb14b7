// Package idem is the table of a website's idempotency keys (SPEC §3.4
// "Retries"): the digests of the keys of the last TTL with the answers of
// their calls, bounded and expired in log order so that every node and
// every replay keeps the same keys, and the encodings of the table and of
// the mark that logs a key with its batch.
//
// The package holds data and encodings only: the engine keeps the table
// under its website's lock, logs the marks and waits for the calls under
// way.
package idem
