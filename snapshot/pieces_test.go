package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDayPiecesModel: day values of every size, written, rewritten larger
// and smaller, deleted one by one, by retention (DropDays) and with their
// website, beside their sealed parts, across reopenings, read back by
// Day, Days, DaysWanted and DaysWithParts equal to a model of what was
// last written (a map), and no piece outlives the value it belongs to.
// Pieces are 64 bytes here, so that most values are stored in pieces.
func TestDayPiecesModel(t *testing.T) {
	defer SetPieceBytes(SetPieceBytes(64))
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { piecesModel(t, seed) })
	}
}

type dayID struct {
	w    uint32
	date int32
}

func piecesModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	s, fs := memStore(t)
	days := map[dayID][]byte{}
	parts := map[dayID][][]byte{}
	sizes := []int{1, 63, 64, 65, 128, 129, 500, 64 * 9}
	value := func() []byte {
		v := make([]byte, sizes[rng.IntN(len(sizes))])
		for i := range v {
			v[i] = byte(rng.IntN(256))
		}
		if len(v) > 0 && rng.IntN(4) == 0 {
			v[0] = stubMark // stored in pieces whatever its length
		}
		return v
	}
	for step := range 60 {
		sn := &Snapshot{}
		switch op := rng.IntN(10); {
		case op < 6: // write a few days, some with a new part
			for range 1 + rng.IntN(3) {
				id := dayID{uint32(1 + rng.IntN(2)), int32(rng.IntN(6))}
				v := value()
				days[id] = v
				sn.Days = append(sn.Days, DayRecord{Website: id.w, Date: id.date, Data: v})
				if rng.IntN(3) == 0 {
					p := value()
					sn.Parts = append(sn.Parts, DayPart{Website: id.w, Date: id.date, Part: uint32(len(parts[id])), Data: p})
					parts[id] = append(parts[id], p)
				}
			}
		case op < 7: // delete one day (nil data)
			id := dayID{uint32(1 + rng.IntN(2)), int32(rng.IntN(6))}
			delete(days, id)
			sn.Days = append(sn.Days, DayRecord{Website: id.w, Date: id.date})
		case op < 8: // retention
			w, cut := uint32(1+rng.IntN(2)), int32(rng.IntN(6))
			sn.DropDays = append(sn.DropDays, DaysBefore{Website: w, Date: cut})
			for id := range days {
				if id.w == w && id.date < cut {
					delete(days, id)
				}
			}
			for id := range parts {
				if id.w == w && id.date < cut {
					delete(parts, id)
				}
			}
		case op < 9: // the website goes
			w := uint32(1 + rng.IntN(2))
			must(t, s.DeleteWebsite(w))
			for id := range days {
				if id.w == w {
					delete(days, id)
				}
			}
			for id := range parts {
				if id.w == w {
					delete(parts, id)
				}
			}
		default:
			s = reopen(t, s, fs)
		}
		if len(sn.Days)+len(sn.DropDays) > 0 {
			must(t, s.WriteSnapshot(sn))
		}
		checkPieces(t, fmt.Sprint("step ", step), s, days, parts)
	}
}

// checkPieces compares every read of the store's days with the model, and
// counts the pieces stored against those the model's values need.
func checkPieces(t *testing.T, at string, s *Store, days map[dayID][]byte, parts map[dayID][][]byte) {
	t.Helper()
	wantPieces := 0
	for w := uint32(1); w <= 2; w++ {
		type day struct {
			Date  int32
			Data  []byte
			Parts [][]byte
		}
		var want, got, gotParts []day
		for d := int32(0); d < 6; d++ {
			id := dayID{w, d}
			v, ok := days[id]
			b, err := s.Day(w, d)
			switch {
			case !ok && !errors.Is(err, ErrNotFound):
				t.Fatalf("%s: Day(%d, %d) = %d bytes, %v; want ErrNotFound", at, w, d, len(b), err)
			case ok && (err != nil || !bytes.Equal(b, v)):
				t.Fatalf("%s: Day(%d, %d) = %d bytes, %v; want the %d written", at, w, d, len(b), err, len(v))
			case ok:
				want = append(want, day{d, v, parts[id]})
				if len(v) > pieceBytes || v[0] == stubMark {
					wantPieces += (len(v) + pieceBytes - 1) / pieceBytes
				}
			}
		}
		must(t, s.Days(w, 0, 5, func(date int32, data []byte) error {
			got = append(got, day{date, bytes.Clone(data), nil})
			return nil
		}))
		must(t, s.DaysWithParts(w, 0, 5, nil, func(date int32, data []byte, p [][]byte) error {
			gotParts = append(gotParts, day{date, data, p})
			return nil
		}))
		var noParts []day
		for _, d := range want {
			noParts = append(noParts, day{d.Date, d.Data, nil})
		}
		if diff := cmp.Diff(noParts, got, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Fatalf("%s: Days of website %d (-want +got):\n%s", at, w, diff)
		}
		if diff := cmp.Diff(want, gotParts, cmp.Comparer(bytes.Equal)); diff != "" {
			t.Fatalf("%s: DaysWithParts of website %d (-want +got):\n%s", at, w, diff)
		}
		var odd []int32
		must(t, s.DaysWanted(w, 0, 5, func(d int32) bool { return d%2 == 1 }, func(date int32, data []byte) error {
			if v := days[dayID{w, date}]; date%2 != 1 || !bytes.Equal(v, data) {
				t.Errorf("%s: DaysWanted gave day %d of website %d: %d bytes", at, date, w, len(data))
			}
			odd = append(odd, date)
			return nil
		}))
		var wantOdd []int32
		for _, d := range want {
			if d.Date%2 == 1 {
				wantOdd = append(wantOdd, d.Date)
			}
		}
		if !slices.Equal(odd, wantOdd) {
			t.Fatalf("%s: DaysWanted of website %d gave %v, want %v", at, w, odd, wantOdd)
		}
	}
	stored := 0
	must(t, s.scan("pieces", []byte{prefixWebsite}, []byte{prefixWebsite + 1}, func(key, _ []byte) error {
		if isPieceKey(key) {
			stored++
		}
		return nil
	}))
	if stored != wantPieces {
		t.Fatalf("%s: %d pieces stored, want %d (the values' own)", at, stored, wantPieces)
	}
	u, err := s.Usage(context.Background(), func(day []byte) int { return len(day) / 2 })
	must(t, err)
	// Half of every day's bytes are "segments" by this split: a pieced
	// day is split once put together, not piece by piece.
	var wantSeg int64
	for _, v := range days {
		wantSeg += int64(len(v) / 2)
	}
	if u.DaySegments != wantSeg {
		t.Fatalf("%s: Usage.DaySegments = %d, want %d", at, u.DaySegments, wantSeg)
	}
}

// TestDayPiecesMissing: a stub whose pieces are not all there (which the
// one batch of a snapshot never leaves) is reported corrupt, not read
// short or made of another value's piece: here piece 1 of 3 is gone and a
// piece 3 is left over (as a website replaced during a snapshot can leave
// one), so that three pieces of the right total length are there.
func TestDayPiecesMissing(t *testing.T) {
	defer SetPieceBytes(SetPieceBytes(64))
	s, _ := memStore(t)
	v := bytes.Repeat([]byte{7}, 64*3)
	must(t, s.WriteSnapshot(&Snapshot{Days: []DayRecord{{Website: 1, Date: 3, Data: v}}}))
	key := dayKey(1, 3)
	must(t, s.db.Delete(pieceKey(key, 1), nil))
	must(t, s.db.Set(pieceKey(key, 3), bytes.Repeat([]byte{9}, 64), nil))
	if got, err := s.Day(1, 3); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Day with piece 1 missing: %d bytes, %v; want ErrCorrupt", len(got), err)
	}
	err := s.Days(1, 0, 5, func(int32, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) {
		t.Errorf("Days with piece 1 missing: %v, want ErrCorrupt", err)
	}
	// A stub claiming more than a day can be is corrupt, not allocated.
	must(t, s.db.Set(key, stub(1<<40, 3), nil))
	if _, err := s.Day(1, 3); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Day of a stub of 1 TiB: %v, want ErrCorrupt", err)
	}
}
