// Package stored is the format of what the engine stores of a website's
// statistics beside its log: a day's value (its buckets and its segments
// in one envelope) and the website's meta record (the last sequence
// applied, the dates with data, the idempotency keys), with their
// versions. The engine reads and writes them through package snapshot;
// this package only encodes and decodes.
package stored
