package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/webstats/webstats/engine/internal/regtx"
	"github.com/webstats/webstats/snapshot"
)

// FuzzDecodeRegistry: the records of a registry transaction's message,
// whatever its bytes, are read or refused without a panic (a follower
// refuses a message it cannot read before changing anything). The
// message's own encoding is package regtx's (FuzzDecode there).
func FuzzDecodeRegistry(f *testing.F) {
	ops := []snapshot.Op{
		{Kind: snapshot.KindCounter, ID: counterWebsite, Value: []byte("7")},
		{Kind: snapshot.KindWebsite, ID: 7, Value: []byte(`{"id":7,"account":1,"domain":"a.example","timezone":"UTC"}`)},
		{Kind: snapshot.KindGoals, ID: 7, Delete: true},
		{Kind: snapshot.KindGoals, ID: 7, Value: []byte(`{"next":1,"goals":[{"id":1,"display_name":"Signup","event_name":"signup"},{"id":2,"display_name":"Visit /a*","page_path":"/a*"}]}`)},
		{Kind: snapshot.KindWebsite, ID: 8, Value: []byte(`{"id":7,"timezone":"UTC"}`)},
		{Kind: snapshot.KindAccount, ID: 1, Value: []byte(`{"id":1,"email":"a@example.org"}`)},
		{Kind: snapshot.KindSession, ID: 3, Value: []byte(`{}`)},
		{Kind: snapshot.KindSecret, ID: 9, Value: make([]byte, 32)},
	}
	for i := range ops {
		msg, err := regtx.Encode(regtx.Message{Base: uint64(i), ID: [16]byte{byte(i)}, Ops: ops[:i+1]})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg)
		f.Add(msg[:len(msg)-1])
	}
	e := &Engine{}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := regtx.Decode(data)
		if err != nil {
			return
		}
		apply, err := e.decodeOps(m.Ops)
		if err == nil && len(apply) != len(m.Ops) {
			t.Fatalf("%d records read into %d installs", len(m.Ops), len(apply))
		}
		for _, fn := range apply {
			if fn == nil {
				t.Fatal("a record read into no install")
			}
		}
	})
}

// TestDecodeOpsRefuses: records a follower cannot install are refused as
// corrupt, before anything changed: a website record of another id, too
// many goals, a kind no transaction carries.
func TestDecodeOpsRefuses(t *testing.T) {
	e := &Engine{}
	for _, o := range []snapshot.Op{
		{Kind: snapshot.KindWebsite, ID: 8, Value: []byte(`{"id":7,"timezone":"UTC"}`)},
		{Kind: snapshot.KindWebsite, ID: 7, Value: []byte(`{"id":7,"timezone":"Local"}`)},
		{Kind: snapshot.KindGoals, ID: 7, Value: []byte(`{"goals":[` + strings.Repeat(`{"id":1,"event_name":"a"},`, MaxGoals) + `{"id":2,"event_name":"b"}]}`)},
		{Kind: snapshot.KindCounter, ID: counterWebsite, Value: []byte("x")},
		{Kind: snapshot.KindSalt, ID: 1, Value: []byte("x")},
	} {
		if _, err := e.decodeOps([]snapshot.Op{o}); !errors.Is(err, snapshot.ErrCorrupt) {
			t.Errorf("%s %d %s: %v, want ErrCorrupt", o.Kind, o.ID, o.Value, err)
		}
	}
}
