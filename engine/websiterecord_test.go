package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/snapshot"
)

// TestWebsiteRecordBytes pins the JSON of a stored website record: data
// directories written before must open unchanged, and a record written now
// must read the same in older versions.
func TestWebsiteRecordBytes(t *testing.T) {
	ctx := context.Background()
	e, _ := openMem(t, newClock("2026-11-21T12:00:00.1234567Z"))
	acct, _, err := engine.NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.Owner(acct.ID).CreateWebsite(ctx, engine.WebsiteInput{
		Domain: str("https://WWW.Example.com/"), Privacy: str("0"), Email: str("1"), ExcludeBots: str("0"),
		ExcludeParams: str("utm_*"), ExcludeIPs: str("10.0.0.0/8"), Timezone: str("Europe/Paris"),
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Registry().Get(snapshot.KindWebsite, uint64(w.ID))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1,"account":` + jsonNum(acct.ID) + `,"domain":"example.com","privacy":0,"email":1,"exclude_bots":0,` +
		`"exclude_params":"utm_*","exclude_ips":"10.0.0.0/8","timezone":"Europe/Paris",` +
		`"created_at":"2026-11-21T12:00:00.123456Z","updated_at":"2026-11-21T12:00:00.123456Z"}`
	if string(got) != want {
		t.Errorf("stored record\n got %s\nwant %s", got, want)
	}

	// Every field set, the unset ones null.
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	full, err := json.Marshal(engine.Website{ID: 7, Account: 3, Domain: "a.example", Privacy: 2, PasswordHash: "$argon2id$x",
		Email: 1, ExcludeBots: 1, Timezone: "UTC", CreatedAt: at, UpdatedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	want = `{"id":7,"account":3,"domain":"a.example","privacy":2,"password_hash":"$argon2id$x","email":1,"exclude_bots":1,` +
		`"exclude_params":null,"exclude_ips":null,"timezone":"UTC","created_at":"2026-01-02T03:04:05.000006Z","updated_at":"2026-01-02T03:04:05.000006Z"}`
	if string(full) != want {
		t.Errorf("record\n got %s\nwant %s", full, want)
	}
}

func jsonNum(n uint32) string { b, _ := json.Marshal(n); return string(b) }
