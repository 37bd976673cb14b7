package jetstream_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go"
	"github.com/webstats/webstats/bench"
	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
	"github.com/webstats/webstats/engine/jetstream"
)

var registryOps = flag.Int("cluster.registry-ops", 60, "registry changes each node makes in TestClusterRegistry")

// registryView is what a node says of its registry: every account with its
// keys and sessions, every website with its goals, the invitations and a
// server secret.
type registryView struct {
	Accounts []identity.Account
	Websites []engine.Website
	Reports  map[uint32]engine.Date // the last weekly report sent, by website
	Goals    map[uint32][]engine.Goal
	Sessions map[uint32][]identity.Session
	Invites  []identity.Invite
	Secret   [32]byte
}

func viewOf(t *testing.T, e *engine.Engine, maxWebsite uint32) registryView {
	t.Helper()
	v := registryView{Goals: map[uint32][]engine.Goal{}, Sessions: map[uint32][]identity.Session{}, Reports: map[uint32]engine.Date{}}
	v.Accounts = identity.Must(e).Accounts(ctx)
	for _, a := range v.Accounts {
		v.Sessions[a.ID] = identity.Must(e).Sessions(ctx, a.ID)
	}
	for id := uint32(1); id <= maxWebsite; id++ {
		w, err := e.Unscoped().Website(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		v.Websites = append(v.Websites, w)
		if v.Goals[id], err = e.Unscoped().Goals(ctx, id); err != nil {
			t.Fatal(err)
		}
		if d, ok, err := identity.Must(e).LastReport(ctx, id, identity.ReportWeekly); err != nil {
			t.Fatal(err)
		} else if ok {
			v.Reports[id] = d
		}
	}
	var err error
	if v.Secret, err = identity.Must(e).Secret(ctx, "cookies"); err != nil {
		t.Fatal(err)
	}
	if len(v.Accounts) > 0 {
		ad, err := identity.Must(e).Admin(v.Accounts[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		v.Invites = ad.Invites(ctx)
	}
	return v
}

// checkUnique fails when two accounts share an email or two websites a
// domain: what a registry shared by racing nodes must never allow.
func checkUnique(t *testing.T, v registryView) {
	t.Helper()
	emails, domains := map[string]uint32{}, map[string]uint32{}
	for _, a := range v.Accounts {
		if other, dup := emails[strings.ToLower(a.Email)]; dup {
			t.Errorf("accounts %d and %d share the email %s", other, a.ID, a.Email)
		}
		emails[strings.ToLower(a.Email)] = a.ID
	}
	for _, w := range v.Websites {
		if other, dup := domains[w.Domain]; dup {
			t.Errorf("websites %d and %d share the domain %s", other, w.ID, w.Domain)
		}
		domains[w.Domain] = w.ID
	}
}

// Two nodes create the same domain (and the same email) at the same time,
// many times over: exactly one of each pair wins, and the other gets the
// validation error one process gives (SPEC §3.2's 422).
func TestClusterRegistryRace(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart}
	var nodes []*node
	for i := range 2 {
		n := openNode(t, nc.urls(i), t.TempDir(), clk, "")
		defer n.close(t)
		nodes = append(nodes, n)
	}
	owner, _, err := identity.Must(nodes[0].e).CreateAccount(ctx, "Owner", "owner@example.org")
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, nodes)
	taken := func(err error, field string) bool {
		var verr *engine.ValidationError
		if !errors.As(err, &verr) {
			return false
		}
		for _, f := range verr.Fields {
			if f.Field == field && strings.Contains(f.Msg, "already been taken") {
				return true
			}
		}
		return false
	}
	const rounds = 20
	for r := range rounds {
		domain := fmt.Sprintf("race%d.example", r)
		email := fmt.Sprintf("race%d@example.org", r)
		var wg sync.WaitGroup
		var werr, aerr [2]error
		start := make(chan struct{})
		for i, n := range nodes {
			wg.Go(func() {
				<-start
				_, werr[i] = n.e.Owner(owner.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
				_, _, aerr[i] = identity.Must(n.e).CreateAccount(ctx, "", email)
			})
		}
		close(start)
		wg.Wait()
		for _, pair := range []struct {
			what  string
			field string
			errs  [2]error
		}{{"website " + domain, "domain", werr}, {"account " + email, "email", aerr}} {
			won := 0
			for _, err := range pair.errs {
				switch {
				case err == nil:
					won++
				case !taken(err, pair.field):
					t.Fatalf("%s: %v; want nil or the field %q taken", pair.what, err, pair.field)
				}
			}
			if won != 1 {
				t.Fatalf("%s: %d nodes created it (%v)", pair.what, won, pair.errs)
			}
		}
	}
	waitApplied(t, nodes)
	v0 := viewOf(t, nodes[0].e, 2*rounds)
	if len(v0.Websites) != rounds || len(v0.Accounts) != rounds+1 {
		t.Fatalf("%d websites and %d accounts, want %d and %d", len(v0.Websites), len(v0.Accounts), rounds, rounds+1)
	}
	checkUnique(t, v0)
	if diff := cmp.Diff(v0, viewOf(t, nodes[1].e, 2*rounds)); diff != "" {
		t.Fatalf("the nodes' registries differ (-node 0 +node 1):\n%s", diff)
	}
}

// Three nodes change the registry at once in every way there is (accounts,
// keys, websites, goals, sessions, invitations), on names chosen from small
// sets so that they collide. Every change a node reports done is seen by
// every node; once all have applied the log, their registries are equal,
// with unique emails and domains. They stay equal after one node restarts
// and another starts from an empty directory (the registry is rebuilt from
// the log alone).
func TestClusterRegistry(t *testing.T) {
	nc := startNATS(t, 3)
	clk := &clock{now: bench.DefaultStart}
	nodes := make([]*node, 3)
	for i := range nodes {
		nodes[i] = openNode(t, nc.urls(i), t.TempDir(), clk, "")
	}
	defer func() {
		for _, n := range nodes {
			n.close(t)
		}
	}()
	admin, _, err := identity.Must(nodes[0].e).CreateAccount(ctx, "Admin", "admin@example.org")
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, nodes)
	ops := *registryOps
	if testing.Short() {
		ops = min(ops, 40)
	}
	l := &ledger{created: map[uint32]string{}, deleted: map[uint32]bool{}, keys: map[string][2]uint32{}}
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			for k := range ops {
				if err := registryStep(n.e, admin.ID, rng, k, l); err != nil {
					t.Errorf("node %d, change %d: %v", i, k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	compare := func(when string) {
		t.Helper()
		// A snapshot writes each node's key and session uses, as
		// registry transactions every node applies.
		for _, n := range nodes {
			if err := n.e.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
		}
		waitApplied(t, nodes)
		const maxWebsite = 1000
		v0 := viewOf(t, nodes[0].e, maxWebsite)
		checkUnique(t, v0)
		if len(v0.Websites) == 0 || len(v0.Accounts) < 2 {
			t.Fatalf("%s: the workload made %d websites and %d accounts", when, len(v0.Websites), len(v0.Accounts))
		}
		have := map[uint32]string{}
		for _, w := range v0.Websites {
			have[w.ID] = w.Domain
		}
		if len(l.created) == 0 {
			t.Fatalf("%s: no website was created", when)
		}
		for id, d := range l.created {
			if got, ok := have[id]; l.deleted[id] == ok || ok && got != d {
				t.Errorf("%s: website %d (%s) created, deleted %v: the registry has %q", when, id, d, l.deleted[id], got)
			}
		}
		for i := 1; i < len(nodes); i++ {
			if diff := cmp.Diff(v0, viewOf(t, nodes[i].e, maxWebsite)); diff != "" {
				t.Fatalf("%s: registries differ (-node 0 +node %d):\n%s", when, i, diff)
			}
		}
		// (After the views: an API key's use is its node's until a
		// snapshot writes it.) Every key a node gave out works on every
		// node exactly while
		// its account still lists it, and every email finds its
		// account: the indexes agree with the records.
		listed := map[[2]uint32]bool{}
		for _, a := range v0.Accounts {
			for _, k := range a.Keys {
				listed[[2]uint32{a.ID, k.ID}] = true
			}
		}
		if len(l.keys) == 0 {
			t.Fatalf("%s: no key was created", when)
		}
		for i, n := range nodes {
			for key, ref := range l.keys {
				a, err := identity.Must(n.e).Authenticate(ctx, key)
				if works := err == nil && a.ID == ref[0] && a.ViaKey == ref[1]; works != listed[ref] {
					t.Errorf("%s: node %d: key %v works %v, listed %v (%v)", when, i, ref, works, listed[ref], err)
				}
			}
			// Every email and domain of the workload's sets, made or
			// not (a change dropped for a conflict must leave none in
			// the indexes).
			emails, domains := map[string]uint32{}, map[string]uint32{}
			for _, a := range v0.Accounts {
				emails[a.Email] = a.ID
			}
			for _, w := range v0.Websites {
				domains[w.Domain] = w.ID
			}
			for k := range 12 {
				email := fmt.Sprintf("u%d@example.org", k)
				a, err := identity.Must(n.e).AccountByEmail(ctx, email)
				if want, ok := emails[email]; ok != (err == nil) || a.ID != want {
					t.Errorf("%s: node %d: %s finds account %d (%v), want %d", when, i, email, a.ID, err, want)
				}
			}
			for k := range 25 {
				d := fmt.Sprintf("s%d.example", k)
				w, err := n.e.Unscoped().WebsiteByDomain(ctx, d)
				if want, ok := domains[d]; ok != (err == nil) || w.ID != want {
					t.Errorf("%s: node %d: %s finds website %d (%v), want %d", when, i, d, w.ID, err, want)
				}
			}
		}
	}
	compare("after the changes")
	nodes[2].close(t)
	nodes[2] = openNode(t, nc.urls(2), nodes[2].dir, clk, "")
	nodes[1].close(t)
	nodes[1] = openNode(t, nc.urls(1), t.TempDir(), clk, "")
	compare("after a restart and a new node")
}

// ledger is what the nodes reported done: the websites created (id and
// domain) and deleted.
type ledger struct {
	mu      sync.Mutex
	created map[uint32]string
	deleted map[uint32]bool
	keys    map[string][2]uint32 // API key → its account and key id
}

func (l *ledger) note(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fn()
}

// registryStep makes one random change of the registry on e. Refusals the
// engine gives in one process too (a taken name, a website or key another
// node deleted) are part of the game; any other error is returned.
func registryStep(e *engine.Engine, admin uint32, rng *rand.Rand, k int, l *ledger) error {
	accounts := identity.Must(e).Accounts(ctx)
	acc := accounts[rng.IntN(len(accounts))]
	own := e.Owner(acc.ID).Websites(ctx, engine.WebsiteQuery{PerPage: 100}).Websites
	var err error
	switch op := rng.IntN(10); {
	case op == 0:
		_, _, err = identity.Must(e).CreateAccount(ctx, "", fmt.Sprintf("u%d@example.org", rng.IntN(12)))
	case op == 1 && rng.IntN(8) == 0:
		var key string
		if key, err = identity.Must(e).RotateKey(ctx, acc.ID); err == nil {
			// (Its id, by the key itself: another node may have
			// added or revoked keys since.)
			if a, aerr := identity.Must(e).Authenticate(ctx, key); aerr == nil {
				l.note(func() { l.keys[key] = [2]uint32{acc.ID, a.ViaKey} })
			}
		}
	case op == 1:
		var ak identity.APIKey
		var key string
		if ak, key, err = identity.Must(e).CreateKey(ctx, acc.ID, fmt.Sprint("key", k)); err == nil {
			l.note(func() { l.keys[key] = [2]uint32{acc.ID, ak.ID} })
		}
	case op == 2 && len(acc.Keys) > 1:
		err = identity.Must(e).RevokeKey(ctx, acc.ID, acc.Keys[rng.IntN(len(acc.Keys))].ID)
	case op <= 4:
		d := fmt.Sprintf("s%d.example", rng.IntN(25))
		var w engine.Website
		if w, err = e.Owner(acc.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d}); err == nil {
			l.note(func() { l.created[w.ID] = w.Domain })
		}
	case op == 5 && len(own) > 0:
		tz := []string{"UTC", "Europe/Berlin", "America/New_York"}[rng.IntN(3)]
		privacy := fmt.Sprint(rng.IntN(2))
		_, err = e.Owner(acc.ID).UpdateWebsite(ctx, own[rng.IntN(len(own))].ID, engine.WebsiteInput{Timezone: &tz, Privacy: &privacy})
	case op == 6 && len(own) > 0 && rng.IntN(3) == 0:
		id := own[rng.IntN(len(own))].ID
		if err = e.Owner(acc.ID).DeleteWebsite(ctx, id); err == nil {
			l.note(func() { l.deleted[id] = true })
		}
	case op == 6 && len(own) > 0:
		w := own[rng.IntN(len(own))].ID
		goals, gerr := e.Owner(acc.ID).Goals(ctx, w)
		if gerr == nil && len(goals) > 0 && rng.IntN(2) == 0 {
			err = e.Owner(acc.ID).DeleteGoal(ctx, w, goals[rng.IntN(len(goals))].ID)
		} else if gerr == nil {
			_, err = e.Owner(acc.ID).AddGoal(ctx, w, engine.Goal{EventName: fmt.Sprint("Event", rng.IntN(5))})
		} else {
			err = gerr
		}
	case op == 7:
		a, aerr := identity.Must(e).Account(ctx, acc.ID)
		if aerr != nil {
			return aerr
		}
		var token string
		token, err = identity.Must(e).CreateSession(ctx, a, identity.SessionClient{UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", IP: netip.MustParseAddr("192.0.2.7")})
		if err == nil {
			// A use of the session, written by the next snapshot.
			_, _ = identity.Must(e).SessionAccount(ctx, token)
		}
	case op == 8 && rng.IntN(6) == 0:
		err = identity.Must(e).EndSessions(ctx, acc.ID)
	case op == 8 && len(own) > 0 && rng.IntN(5) == 0:
		err = identity.Must(e).SetLastReport(ctx, own[rng.IntN(len(own))].ID, identity.ReportWeekly, engine.Date(20_000+k))
	case op == 8:
		if s := identity.Must(e).Sessions(ctx, acc.ID); len(s) > 0 {
			err = identity.Must(e).EndSessionID(ctx, acc.ID, s[rng.IntN(len(s))].ID)
		}
	default:
		ad, aerr := identity.Must(e).Admin(admin)
		if aerr != nil {
			return aerr
		}
		if inv := ad.Invites(ctx); len(inv) > 0 && rng.IntN(2) == 0 {
			err = ad.DeleteInvite(ctx, inv[rng.IntN(len(inv))].ID)
		} else {
			_, _, err = ad.CreateInvite(ctx)
		}
	}
	var verr *engine.ValidationError
	switch {
	case err == nil, errors.As(err, &verr), errors.Is(err, engine.ErrNotFound), errors.Is(err, identity.ErrUnauthenticated):
		return nil
	}
	return err
}

// While the log is unreachable every registry change fails with
// ErrClusterUnavailable and leaves the node's registry exactly as it was,
// indexes included (a dry run's email, domain or key must not linger);
// once the log is back, the same changes succeed. New refuses a
// connection that would buffer a publish while disconnected and send it
// after Publish gave up.
func TestClusterRegistryUnavailable(t *testing.T) {
	c := startNATS(t, 1)
	buffered, err := nats.Connect(c.url(0))
	if err != nil {
		t.Fatal(err)
	}
	defer buffered.Close()
	if _, err := jetstream.New(ctx, buffered, jetstream.Options{Name: "down", Replicas: 1}); !errors.Is(err, jetstream.ErrReconnectBuffer) {
		t.Fatalf("New with a reconnect buffer: %v, want ErrReconnectBuffer", err)
	}
	nc, err := nats.Connect(c.url(0), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	log, err := jetstream.New(ctx, nc, jetstream.Options{Name: "down", Replicas: 1, PublishTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: bench.DefaultStart}
	e, err := engine.Open(&engine.Options{Dir: t.TempDir(), NoSync: true, SnapshotEvery: -1, Now: clk.Now, Cluster: log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	admin, key1, err := identity.Must(e).CreateAccount(ctx, "Admin", "admin@example.org")
	if err != nil {
		t.Fatal(err)
	}
	d := "w.example"
	w, err := e.Owner(admin.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	goal, err := e.Owner(admin.ID).AddGoal(ctx, w.ID, engine.Goal{EventName: "Signup"})
	if err != nil {
		t.Fatal(err)
	}
	k2, key2, err := identity.Must(e).CreateKey(ctx, admin.ID, "second")
	if err != nil {
		t.Fatal(err)
	}
	a, err := identity.Must(e).Account(ctx, admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	ua := identity.SessionClient{UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"}
	if _, err := identity.Must(e).CreateSession(ctx, a, ua); err != nil {
		t.Fatal(err)
	}
	ad, err := identity.Must(e).Admin(admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ad.CreateInvite(ctx); err != nil {
		t.Fatal(err)
	}
	before := viewOf(t, e, 10)
	lastBefore, err := log.Last(ctx)
	if err != nil {
		t.Fatal(err)
	}

	c.stop(0)
	tz, newDomain, newEmail := "Europe/Berlin", "new.example", "new@example.org"
	changes := map[string]func() error{
		"CreateAccount": func() error { _, _, err := identity.Must(e).CreateAccount(ctx, "", newEmail); return err },
		"CreateKey":     func() error { _, _, err := identity.Must(e).CreateKey(ctx, admin.ID, "third"); return err },
		"RevokeKey":     func() error { return identity.Must(e).RevokeKey(ctx, admin.ID, k2.ID) },
		"RotateKey":     func() error { _, err := identity.Must(e).RotateKey(ctx, admin.ID); return err },
		"UpdateProfile": func() error { _, err := identity.Must(e).UpdateProfile(ctx, admin.ID, "Renamed"); return err },
		"CreateWebsite": func() error {
			_, err := e.Owner(admin.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &newDomain})
			return err
		},
		"UpdateWebsite": func() error {
			_, err := e.Owner(admin.ID).UpdateWebsite(ctx, w.ID, engine.WebsiteInput{Timezone: &tz})
			return err
		},
		"DeleteWebsite": func() error { return e.Owner(admin.ID).DeleteWebsite(ctx, w.ID) },
		"AddGoal": func() error {
			_, err := e.Owner(admin.ID).AddGoal(ctx, w.ID, engine.Goal{EventName: "Purchase"})
			return err
		},
		"DeleteGoal":    func() error { return e.Owner(admin.ID).DeleteGoal(ctx, w.ID, goal.ID) },
		"CreateSession": func() error { _, err := identity.Must(e).CreateSession(ctx, a, ua); return err },
		"EndSessions":   func() error { return identity.Must(e).EndSessions(ctx, admin.ID) },
		"CreateInvite":  func() error { _, _, err := ad.CreateInvite(ctx); return err },
		"DeleteInvite":  func() error { return ad.DeleteInvite(ctx, before.Invites[0].ID) },
		"SetLastReport": func() error { return identity.Must(e).SetLastReport(ctx, w.ID, identity.ReportWeekly, 20_000) },
	}
	for name, change := range changes {
		if err := change(); !errors.Is(err, engine.ErrClusterUnavailable) {
			t.Errorf("%s with the log down: %v, want ErrClusterUnavailable", name, err)
		}
	}
	if diff := cmp.Diff(before, viewOf(t, e, 10)); diff != "" {
		t.Fatalf("failed changes changed the registry (-before +after):\n%s", diff)
	}
	if _, err := identity.Must(e).AccountByEmail(ctx, newEmail); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the failed account's email finds %v", err)
	}
	if _, err := e.Unscoped().WebsiteByDomain(ctx, newDomain); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("the failed website's domain finds %v", err)
	}
	if _, _, err := identity.Must(e).LastReport(ctx, w.ID, identity.ReportWeekly); err != nil {
		t.Error(err)
	}

	c.start(0)
	// Once connected again, nothing of the failed changes reaches the
	// log (no publish was kept to be sent later), and the registry is
	// still as it was.
	for !nc.IsConnected() {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // what a reconnect would flush, it has
	var lastAfter uint64
	for deadline := time.Now().Add(30 * time.Second); ; {
		if lastAfter, err = log.Last(ctx); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || lastAfter != lastBefore {
		t.Fatalf("the log went from message %d to %d (%v) while every change failed", lastBefore, lastAfter, err)
	}
	if diff := cmp.Diff(before, viewOf(t, e, 10)); diff != "" {
		t.Fatalf("the registry changed after the log came back (-before +after):\n%s", diff)
	}
	// (After the views: a key's use shows in its account's view.)
	for _, key := range []string{key1, key2} {
		if _, err := identity.Must(e).Authenticate(ctx, key); err != nil {
			t.Errorf("a key stopped working: %v", err)
		}
	}
	// The same changes now succeed: no dry run left a name taken.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, err := identity.Must(e).CreateAccount(ctx, "", newEmail)
		if err == nil {
			break
		}
		if !errors.Is(err, engine.ErrClusterUnavailable) || time.Now().After(deadline) {
			t.Fatalf("CreateAccount with the log back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := e.Owner(admin.ID).CreateWebsite(ctx, engine.WebsiteInput{Domain: &newDomain}); err != nil {
		t.Fatalf("CreateWebsite with the log back: %v", err)
	}
	if _, err := e.Owner(admin.ID).AddGoal(ctx, w.ID, engine.Goal{EventName: "Purchase"}); err != nil {
		t.Fatalf("AddGoal with the log back: %v", err)
	}
	if err := e.Owner(admin.ID).DeleteWebsite(ctx, w.ID); err != nil {
		t.Fatalf("DeleteWebsite with the log back: %v", err)
	}
}
