package identity

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/webstats/webstats/buckets"
	"github.com/webstats/webstats/engine"
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
func (e *Service) LastReport(ctx context.Context, website uint32, kind ReportKind) (engine.Date, bool, error) {
	if !e.reg.Enter() {
		return 0, false, engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.storedReport(website, kind)
}

// storedReport reads the record of the last report sent (or claimed).
func (e *Service) storedReport(website uint32, kind ReportKind) (engine.Date, bool, error) {
	v, err := e.reg.Get(snapshot.KindReport, reportID(website, kind))
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
func (e *Service) SetLastReport(ctx context.Context, website uint32, kind ReportKind, first engine.Date) error {
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.reg.Do(ctx, engine.LockRead, func() error {
		if !e.reg.HasWebsite(website) {
			return engine.ErrNotFound
		}
		if err := e.reg.Put(snapshot.KindReport, reportID(website, kind), strconv.AppendInt(nil, int64(first), 10)); err != nil {
			return fmt.Errorf("engine: record report of website %d: %w", website, err)
		}
		return nil
	})
}

// ClaimReport records that the caller sends the report of the period
// starting on first, unless the record says that period (or a later one)
// was sent or claimed already; it reports whether the claim is the
// caller's. The record goes first so that, in a cluster, the one node
// whose claim commits sends the report and the others see it claimed (a
// registry transaction: a claim that lost is run again and finds the
// winner's). prev and hadPrev are the record before the claim, for
// ReleaseReport. A process that stops between its claim and the delivery
// leaves that period unsent: a report is sent at most once.
func (e *Service) ClaimReport(ctx context.Context, website uint32, kind ReportKind, first engine.Date) (claimed bool, prev engine.Date, hadPrev bool, err error) {
	if !e.reg.Enter() {
		return false, 0, false, engine.ErrClosed
	}
	defer e.reg.Exit()
	err = e.regDo(ctx, func() error {
		claimed, prev, hadPrev = false, 0, false
		if !e.reg.HasWebsite(website) {
			return engine.ErrNotFound
		}
		last, ok, err := e.storedReport(website, kind)
		if err != nil {
			return err
		}
		prev, hadPrev = last, ok
		if ok && last >= first {
			return nil // sent, or being sent by another
		}
		if err := e.reg.Put(snapshot.KindReport, reportID(website, kind), strconv.AppendInt(nil, int64(first), 10)); err != nil {
			return fmt.Errorf("engine: claim report of website %d: %w", website, err)
		}
		claimed = true
		return nil
	})
	return claimed, prev, hadPrev, err
}

// ReleaseReport undoes the caller's claim (ClaimReport) of the period
// starting on first, whose report could not be sent: the record goes back
// to prev (to none without hadPrev), unless it no longer says first.
func (e *Service) ReleaseReport(ctx context.Context, website uint32, kind ReportKind, first, prev engine.Date, hadPrev bool) error {
	if !e.reg.Enter() {
		return engine.ErrClosed
	}
	defer e.reg.Exit()
	return e.regDo(ctx, func() error {
		if !e.reg.HasWebsite(website) {
			return nil // deleted, and its record with it
		}
		last, ok, err := e.storedReport(website, kind)
		if err != nil || !ok || last != first {
			return err
		}
		id := reportID(website, kind)
		if !hadPrev {
			return e.reg.Delete(snapshot.KindReport, id)
		}
		return e.reg.Put(snapshot.KindReport, id, strconv.AppendInt(nil, int64(prev), 10))
	})
}

// Secret returns the server secret called name (for example the key that
// signs the statistics pages' cookies), creating and storing a random one on
// first use. It never leaves the server.
func (e *Service) Secret(ctx context.Context, name string) ([32]byte, error) {
	var s [32]byte
	if !e.reg.Enter() {
		return s, engine.ErrClosed
	}
	defer e.reg.Exit()
	h := sha256.Sum256([]byte(name))
	id := binary.BigEndian.Uint64(h[:8])
	// regDo serialises creation; in cluster mode the first node's
	// secret is every node's.
	err := e.regDo(ctx, func() error {
		v, err := e.reg.Get(snapshot.KindSecret, id)
		if err == nil && len(v) == len(s) {
			copy(s[:], v)
			return nil
		}
		if err != nil && !errors.Is(err, snapshot.ErrNotFound) {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		if _, err := io.ReadFull(e.reg.Rand(), s[:]); err != nil {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		if err := e.reg.Put(snapshot.KindSecret, id, s[:]); err != nil {
			return fmt.Errorf("engine: secret %q: %w", name, err)
		}
		return nil
	})
	return s, err
}
