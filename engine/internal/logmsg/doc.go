// Package logmsg frames the messages of the cluster's shared log that
// carry hits: the records of one Track call for one website, plain or
// zstd-compressed, after the idempotency key of a TrackOnce; and the
// no-op a quiet node publishes. Other kinds are a registry transaction
// (package regtx) and an import (package importlog).
//
// A message is a kind byte, then the records, each preceded by its length
// (uvarint). Kind Zstd holds them zstd-compressed, after their uncompressed
// length (uvarint); Records.Message compresses what is larger than 16 KiB.
// Kind Keyed holds the key (after its length) before the message of its
// records: the key and the records are applied together, on every node.
package logmsg
