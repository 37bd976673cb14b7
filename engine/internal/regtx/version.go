package regtx

import (
	"strconv"

	"github.com/webstats/webstats/snapshot"
)

// VersionID is the snapshot.KindCluster record of the registry version a
// store has applied: the log position of its last transaction, in decimal.
const VersionID = 2

// VersionOp is the write that records version seq, stored in the batch
// of the transaction at seq.
func VersionOp(seq uint64) snapshot.Op {
	return snapshot.Op{Kind: snapshot.KindCluster, ID: VersionID, Value: strconv.AppendUint(nil, seq, 10)}
}

// ParseVersion reads the value of the VersionID record.
func ParseVersion(v []byte) (uint64, error) { return strconv.ParseUint(string(v), 10, 64) }
