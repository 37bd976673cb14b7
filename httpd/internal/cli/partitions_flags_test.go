package cli

import (
	"strings"
	"testing"
)

// The partition flags: a count of 1 to 64, with cluster mode, and at
// least one owner.
func TestPartitionFlags(t *testing.T) {
	for _, tc := range []struct {
		c    Cluster
		want string // "" for valid
	}{
		{Cluster{NATS: "nats://127.0.0.1:4222", Partitions: 64, Owners: 2}, ""},
		{Cluster{NATS: "nats://127.0.0.1:4222", Partitions: 0, Owners: 2}, ""},
		{Cluster{NATS: "nats://127.0.0.1:4222", Partitions: 65, Owners: 2}, "-partitions 65"},
		{Cluster{NATS: "nats://127.0.0.1:4222", Partitions: -1, Owners: 2}, "-partitions -1"},
		{Cluster{Partitions: 4, Owners: 2}, "-partitions needs -nats"},
		{Cluster{NATS: "nats://127.0.0.1:4222", Partitions: 4, Owners: 0}, "-partition-owners 0"},
	} {
		err := tc.c.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error about %q", tc.c, err, tc.want)
		}
	}
}
