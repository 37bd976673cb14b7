package snapshot_test

import (
	"fmt"
	"log"

	"github.com/webstats/webstats/snapshot"
)

// A hit is logged, a snapshot covers it and trims the log, and a restart
// replays only what the snapshot does not cover.
func Example() {
	fs := snapshot.NewMemFS()
	s, err := snapshot.Open(&snapshot.Options{Dir: "data", FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := s.Append(snapshot.LogEntry{Seq: seq, Data: fmt.Appendf(nil, "hit %d", seq)}); err != nil {
			log.Fatal(err)
		}
	}
	err = s.WriteSnapshot(&snapshot.Snapshot{
		Days:  []snapshot.DayRecord{{Website: 1, Date: 20000, Data: []byte("bucket with hits 1 and 2")}},
		Sites: []snapshot.SiteRecord{{Website: 1, Data: []byte("last seq 2")}},
		Trim:  2,
	})
	if err != nil {
		log.Fatal(err)
	}
	s.Close()

	s, err = snapshot.Open(&snapshot.Options{Dir: "data", FS: fs})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	day, _ := s.Day(1, 20000)
	fmt.Printf("day: %s\n", day)
	s.ReplayLog(s.Trim(), func(seq uint64, data []byte) error {
		fmt.Printf("replay %d: %s\n", seq, data)
		return nil
	})
	// Output:
	// day: bucket with hits 1 and 2
	// replay 3: hit 3
}
