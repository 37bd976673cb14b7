package engine

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// openGated opens an in-memory engine with a website of password pw whose
// hash gate calls held with a slot held.
func openGated(t *testing.T, pw string) (*Engine, uint32, uint32) {
	t.Helper()
	e, err := Open(&Options{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := context.Background()
	a, _, err := NewTestAccount()
	if err != nil {
		t.Fatal(err)
	}
	d, p := "gated.example", "2"
	w, err := e.Owner(a.ID).CreateWebsite(ctx, WebsiteInput{Domain: &d, Privacy: &p, Password: &pw})
	if err != nil {
		t.Fatal(err)
	}
	return e, a.ID, w.ID
}

// TestPasswordHashOutsideRegistryLock checks that a password being hashed
// (argon2id: 19 MiB, tens of ms) does not hold the registry lock, which
// every Track, Authenticate and page reads.
func TestPasswordHashOutsideRegistryLock(t *testing.T) {
	e, account, site := openGated(t, "first")
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e.gate.Held = func() {
		once.Do(func() { close(entered) })
		<-release
	}
	done := make(chan error, 1)
	go func() {
		pw := "second"
		_, err := e.Owner(account).UpdateWebsite(context.Background(), site, WebsiteInput{Password: &pw})
		done <- err
	}()
	<-entered // the update is hashing now
	reads := make(chan error, 1)
	go func() {
		_, err := e.Owner(account).Website(context.Background(), site)
		if err == nil {
			_, err = e.Track(context.Background(), Hit{URL: "https://gated.example/", IP: netip.MustParseAddr("192.0.2.1"), UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0", Time: time.Now()})
		}
		reads <- err
	}()
	select {
	case err := <-reads:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("reading the registry waited for a password hash")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.gate.Held = nil
	if ok, err := e.CheckPassword(context.Background(), site, "second"); !ok || err != nil {
		t.Errorf("CheckPassword(new) = %v, %v", ok, err)
	}
}

// TestPasswordHashesBounded checks that at most MaxPasswordHashes hashes
// run at once, that one more waits and then fails with ErrBusy, and that
// the gate opens again.
func TestPasswordHashesBounded(t *testing.T) {
	e, _, site := openGated(t, "right")
	e.gate.Wait = 50 * time.Millisecond
	entered, release := make(chan struct{}, MaxPasswordHashes), make(chan struct{})
	e.gate.Held = func() {
		entered <- struct{}{}
		<-release
	}
	var wg sync.WaitGroup
	for range MaxPasswordHashes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, err := e.CheckPassword(context.Background(), site, "right"); !ok || err != nil {
				t.Errorf("CheckPassword while the gate was full = %v, %v", ok, err)
			}
		}()
	}
	for range MaxPasswordHashes {
		<-entered
	}
	if _, err := e.CheckPassword(context.Background(), site, "right"); !errors.Is(err, ErrBusy) {
		t.Errorf("CheckPassword beyond MaxPasswordHashes: %v, want ErrBusy", err)
	}
	pw := "new one"
	if _, err := e.Unscoped().UpdateWebsite(context.Background(), site, WebsiteInput{Password: &pw}); !errors.Is(err, ErrBusy) {
		t.Errorf("UpdateWebsite beyond MaxPasswordHashes: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.gate.Wait = time.Hour
	if _, err := e.CheckPassword(ctx, site, "right"); !errors.Is(err, context.Canceled) {
		t.Errorf("CheckPassword with a canceled context: %v", err)
	}
	close(release)
	wg.Wait()
	e.gate.Held = nil
	if ok, err := e.CheckPassword(context.Background(), site, "wrong"); ok || err != nil {
		t.Errorf("CheckPassword(wrong) after the flood = %v, %v", ok, err)
	}
	if got := e.gate.Busy(); got != 2 {
		t.Errorf("busy count %d, want 2", got)
	}
}

// TestPasswordPriority (#38): while a flood of guesses holds every hash
// slot, a check marked WithPasswordPriority (a client that has not failed)
// waits longer than an unmarked one, which fails with ErrBusy, and takes the
// next free slot before an unmarked check that queued earlier.
func TestPasswordPriority(t *testing.T) {
	e, _, site := openGated(t, "right")
	e.gate.Wait, e.gate.PriorityWait = 100*time.Millisecond, 10*time.Second
	var holders sync.WaitGroup
	entered, release := make(chan struct{}, MaxPasswordHashes), make(chan struct{})
	var mu sync.Mutex
	n := 0
	e.gate.Held = func() {
		mu.Lock()
		n++
		block := n <= MaxPasswordHashes // the flood's checks hold the slots
		mu.Unlock()
		if block {
			entered <- struct{}{}
			<-release
		}
	}
	for range MaxPasswordHashes {
		holders.Add(1)
		go func() {
			defer holders.Done()
			e.CheckPassword(context.Background(), site, "guess")
		}()
	}
	for range MaxPasswordHashes {
		<-entered
	}
	// An unmarked check gives up after its wait.
	if _, err := e.CheckPassword(context.Background(), site, "right"); !errors.Is(err, ErrBusy) {
		t.Fatalf("unmarked check with the slots held: %v, want ErrBusy", err)
	}
	done := make(chan string, 2)
	e.gate.Wait = 10 * time.Second
	go func() {
		ok, err := e.CheckPassword(context.Background(), site, "right")
		if !ok || err != nil {
			t.Errorf("unmarked check: %v, %v", ok, err)
		}
		done <- "unmarked"
	}()
	time.Sleep(50 * time.Millisecond) // the unmarked check queues first
	go func() {
		ok, err := e.CheckPassword(WithPasswordPriority(context.Background()), site, "right")
		if !ok || err != nil {
			t.Errorf("marked check: %v, %v", ok, err)
		}
		done <- "marked"
	}()
	time.Sleep(200 * time.Millisecond) // longer than the old unmarked wait
	release <- struct{}{}              // one slot frees
	if first := <-done; first != "marked" {
		t.Errorf("the freed slot went to the %s check, want the marked one", first)
	}
	close(release)
	holders.Wait()
	<-done
}
