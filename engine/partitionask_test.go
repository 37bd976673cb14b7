package engine

import (
	"bytes"
	"encoding/gob"
	"testing"
)

// TestAskRevenueWireName: a revenue metric in a cluster node's answer
// (askReply, gob) goes by the name it had before Revenue moved to package
// engine/query, so that nodes of both versions answer each other in a
// rolling upgrade; and it decodes back to the same value.
func TestAskRevenueWireName(t *testing.T) {
	want := &Revenue{Value: 12.5, Currency: "EUR", Short: "€12.5", Long: "€12.50"}
	rep := askReply{Result: QueryResult{Results: []QueryRow{{Metrics: []any{int64(3), want}}}}}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(&rep); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b.Bytes(), []byte("*engine.Revenue")) {
		t.Errorf("the encoded answer does not name *engine.Revenue: %q", b.Bytes())
	}
	var got askReply
	if err := gob.NewDecoder(&b).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if r, ok := got.Result.Results[0].Metrics[1].(*Revenue); !ok || *r != *want {
		t.Errorf("decoded %#v, want %#v", got.Result.Results[0].Metrics[1], want)
	}
}
