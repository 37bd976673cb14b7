package password

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHashCheck: a hash checks its password and no other; hashes this
// package cannot read match nothing; Dummy is one it reads.
func TestHashCheck(t *testing.T) {
	var h Hasher
	ctx := context.Background()
	phc, err := h.Hash(ctx, "correct horse", rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("Hash = %q: not the package's parameters", phc)
	}
	for _, tt := range []struct {
		name, phc, pw string
		want          bool
	}{
		{"right", phc, "correct horse", true},
		{"wrong", phc, "correct horse ", false},
		{"dummy", Dummy, "", false},
		{"bcrypt", "$2a$10$abcdefghijklmnopqrstuv", "x", false},
		{"too much memory", strings.Replace(phc, "m=19456", "m=2000000", 1), "correct horse", false},
		{"no lanes", strings.Replace(phc, "p=1", "p=0", 1), "correct horse", false},
		{"bad salt", strings.Replace(phc, "$argon2id$v=19$m=19456,t=2,p=1$", "$argon2id$v=19$m=19456,t=2,p=1$!", 1), "correct horse", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := h.Check(ctx, tt.phc, tt.pw); got != tt.want || err != nil {
				t.Errorf("Check = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if _, err := h.Hash(ctx, "x", strings.NewReader("short")); err == nil {
		t.Error("Hash with a failing salt source: no error")
	}
}

// TestCheckInput: control characters, invalid UTF-8 and more than
// MaxLength characters are refused; MaxLength characters of any script are
// not.
func TestCheckInput(t *testing.T) {
	for _, tt := range []struct {
		pw   string
		want bool // refused
	}{
		{"hunter22", false},
		{strings.Repeat("é", MaxLength), false},
		{strings.Repeat("é", MaxLength+1), true},
		{"tab\there", true},
		{"nul\x00", true},
		{"bad \xff utf-8", true},
	} {
		if got := CheckInput(tt.pw) != ""; got != tt.want {
			t.Errorf("CheckInput(%q) refused %v, want %v", tt.pw, got, tt.want)
		}
	}
}

// TestHasherBusy: with MaxHashes slots held, a hash waits Wait and fails
// with ErrBusy, a canceled one with ctx's error, and a prioritised one
// waits longer and gets the next free slot.
func TestHasherBusy(t *testing.T) {
	h := Hasher{Wait: 20 * time.Millisecond, PriorityWait: 10 * time.Second}
	entered, release := make(chan struct{}), make(chan struct{})
	ctx := context.Background()
	for range MaxHashes {
		go h.run(ctx, func() { entered <- struct{}{}; <-release })
		<-entered
	}
	if err := h.run(ctx, func() {}); !errors.Is(err, ErrBusy) {
		t.Errorf("run with the slots held = %v, want ErrBusy", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := h.run(canceled, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("run canceled = %v, want context.Canceled", err)
	}
	if h.Busy() != 1 {
		t.Errorf("Busy = %d, want 1", h.Busy())
	}
	done := make(chan error)
	go func() { done <- h.run(WithPriority(ctx), func() {}) }()
	time.Sleep(50 * time.Millisecond) // longer than Wait
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Errorf("prioritised run = %v", err)
	}
	close(release)
}
