package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/webstats/webstats/engine/internal/config"
	"github.com/webstats/webstats/engine/internal/salts"
)

func TestFillDefaults(t *testing.T) {
	c, err := config.Fill(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxImportKeys != config.DefaultMaxImportKeys || c.MaxValues != config.DefaultMaxValues ||
		c.UACacheSize != 4096 || c.SnapshotEvery != 30*time.Second || c.CatchUp != time.Minute ||
		c.Now == nil || c.Rand == nil || c.Logger == nil || c.Dir != "webstats-mem" || c.FS == nil {
		t.Errorf("Fill(nil) = %+v", c)
	}
	in := &config.Options{MaxValues: -1, SnapshotEvery: -1, Dir: "/data"}
	c, err = config.Fill(in)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxValues != -1 || c.SnapshotEvery != -1 || c.FS != nil || in.Now != nil {
		t.Errorf("Fill kept %+v (and must not change its argument: %+v)", c, in)
	}
}

// nopCluster is a Cluster that is never called.
type nopCluster struct{ config.Cluster }

func TestFillInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    config.Options
		want string
	}{
		{name: "salt period", o: config.Options{SaltPeriod: salts.Month + 1}, want: "invalid salt period"},
		{name: "retention", o: config.Options{Retention: -1}, want: "negative retention"},
		{name: "budget", o: config.Options{MemoryBudget: -1}, want: "negative memory budget"},
		{name: "sync interval", o: config.Options{SyncInterval: -1}, want: "negative sync interval"},
		{name: "sync interval and no sync", o: config.Options{SyncInterval: time.Second, NoSync: true}, want: "exclusive"},
		{name: "sync interval in a cluster", o: config.Options{SyncInterval: time.Second, Cluster: nopCluster{}}, want: "cluster's log acknowledges"},
		{name: "partitions alone", o: config.Options{Partitions: nopPartitioner{}}, want: "partitions without a cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Fill(&tc.o)
			if err == nil || !strings.HasPrefix(err.Error(), "engine: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Fill: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// nopPartitioner is a Partitioner that is never called.
type nopPartitioner struct{ config.Partitioner }
