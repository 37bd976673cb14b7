package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/snapshot"
)

// ReportKind names a kind of periodic report, for LastReport and
// SetLastReport.
type ReportKind uint8

// The report kinds.
const (
	ReportWeekly ReportKind = iota + 1
	ReportMonthly
)

func reportID(website uint32, kind ReportKind) uint64 { return uint64(website)<<8 | uint64(kind) }

// LastReport returns the first day of the last period whose report was sent
// for the website, and false when none was.
func (e *Engine) LastReport(ctx context.Context, website uint32, kind ReportKind) (Date, bool, error) {
	if !e.enter() {
		return 0, false, ErrClosed
	}
	defer e.exit()
	v, err := e.store.Get(snapshot.KindReport, reportID(website, kind))
	if errors.Is(err, snapshot.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("engine: last report of website %d: %w", website, err)
	}
	d, err := strconv.ParseInt(string(v), 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("engine: last report of website %d: %w", website, snapshot.ErrCorrupt)
	}
	return buckets.Date(d), true, nil
}

// SetLastReport records, durably, that the report of the period starting on
// first was sent for the website.
func (e *Engine) SetLastReport(ctx context.Context, website uint32, kind ReportKind, first Date) error {
	if !e.enter() {
		return ErrClosed
	}
	defer e.exit()
	return e.regDoAs(ctx, regRead, func() error {
		if _, ok := e.sites[website]; !ok {
			return ErrNotFound
		}
		if err := e.regPut(snapshot.KindReport, reportID(website, kind), strconv.AppendInt(nil, int64(first), 10)); err != nil {
			return fmt.Errorf("engine: record report of website %d: %w", website, err)
		}
		return nil
	})
}

// Secret returns the server secret called name (for example the key that
// signs the statistics pages' cookies), creating and storing a random one on
// first use. It never leaves the server.
func (e *Engine) Secret(ctx context.Context, name string) ([32]byte, error) {
	var s [32]byte
	if !e.enter() {
		return s, ErrClosed
	}
	defer e.exit()
	h := sha256.Sum256([]byte(name))
	id := binary.BigEndian.Uint64(h[:8])
	// regDo serialises creation; in cluster mode the first node's
	// secret is every node's.
	err := e.regDo(ctx, func() error {
		v, err := e.store.Get(snapshot.KindSecret, id)
		if err == nil && len(v) == len(s) {
			copy(s[:], v)
			return nil
		}
		if err != nil && !errors.Is(err, snapshot.ErrNotFound) {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		if _, err := io.ReadFull(e.opts.Rand, s[:]); err != nil {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		if err := e.regPut(snapshot.KindSecret, id, s[:]); err != nil {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		return nil
	})
	return s, err
}
