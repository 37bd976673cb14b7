// Package importlog is how imports and their deletions go through the
// cluster's log: their messages, and the import state each website's
// messages are applied against, alike on every node, in log order.
//
// # Design
//
// (docs/design.md, "The imported layer".) An import or a deletion goes
// through the shared log on its website's subject, like the website's
// hits, and every node that applies the website's records writes it to its
// own store in log order; a node that does not (another partition's) skips
// it. Nothing is decided by the node that publishes but what travels as
// data (the record, its creation time, the rows): the import's id and the
// bounds (MaxImports, MaxRows of package imported) are decided when the
// first message applies, from what the store holds then, alike on every
// node.
//
// An import larger than one message of the log goes as several (Split),
// each holding whole chunks (imported's Data.Chunks makes them small
// enough): the first claims the next id and writes its chunks, the others
// add theirs, and the last writes the import's record (chunk 0), which
// makes it visible to queries at once. Until then the import is pending:
// the website's import state (chunk StateChunk of import 0) lists it by
// the publisher's token. Each message's writes and the log position of
// the message are one batch of the store, and a message at or before that
// position is skipped: a restart or a partition gained from an older state
// replays the log from before it without applying anything twice. A
// pending import whose first message is older, by the log's clock, than
// PendingTTL when another import message of its website applies is given
// up (its publisher died between two messages): every node drops it
// alike.
package importlog
