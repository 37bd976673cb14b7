// Package importline is the import line of SPEC §3.4 as a Go value: what
// the export writes (from the engine's stored hits) and what the peers'
// converters (package peerimport) and the command line's import produce.
// It has one job: the line's shape and its JSON encoding; checking a line
// stays with the import endpoint (httpd's parseImport), the one judge.
package importline

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

// Line is one import line (SPEC §3.4 and the given device and location
// keys of the README's "Moving in and out"). Empty fields are left out.
type Line struct {
	Time        string          `json:"time"`
	Page        string          `json:"page"`
	Referrer    string          `json:"referrer,omitempty"`
	UserAgent   string          `json:"user_agent,omitempty"`
	Visitor     string          `json:"visitor,omitempty"`
	Screen      string          `json:"screen_resolution,omitempty"`
	Language    string          `json:"language,omitempty"`
	Event       *Event          `json:"event,omitempty"`
	Interactive *bool           `json:"interactive,omitempty"`
	Props       json.RawMessage `json:"props,omitempty"`
	H           int             `json:"h,omitempty"` // 1: hash-based routing (SPEC §2.4)

	Browser        string `json:"browser,omitempty"`
	BrowserVersion string `json:"browser_version,omitempty"`
	OS             string `json:"os,omitempty"`
	OSVersion      string `json:"os_version,omitempty"`
	Device         string `json:"device,omitempty"`
	Country        string `json:"country,omitempty"`
	Region         string `json:"region,omitempty"`
	RegionName     string `json:"region_name,omitempty"`
	City           string `json:"city,omitempty"`
	CityID         uint32 `json:"city_id,omitempty"`
}

// Event is a line's custom event.
type Event struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value,omitempty"`
	Unit  string          `json:"unit,omitempty"`
}

// Time formats t as a line's time: RFC 3339 in UTC.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FromExported is the import line of a stored hit: imported into an empty
// website it is counted as the hit was.
func FromExported(h *engine.ExportedHit) Line {
	l := Line{
		Time: Time(h.Time), Visitor: h.Visitor,
		Screen: h.Screen, Language: h.Language,
		Browser: h.Browser, BrowserVersion: h.BrowserVersion, OS: h.OS, OSVersion: h.OSVersion, Device: h.Device,
		Country: h.Country, Region: h.Region, RegionName: h.RegionName, City: h.City, CityID: h.CityID,
	}
	l.Page = h.Path
	if l.Page == "" {
		l.Page = "/"
	}
	if h.Host != "" {
		l.Page = "https://" + h.Host + l.Page
	}
	if h.Query != "" {
		base, frag, hasFrag := strings.Cut(l.Page, "#")
		l.Page = base + "?" + h.Query
		if hasFrag {
			l.Page += "#" + frag
		}
	}
	if strings.Contains(h.Path, "#") {
		l.H = 1 // hash-based routing: the fragment is the page's
	}
	if h.Referrer != "" {
		l.Referrer = "https://" + h.Referrer
	}
	if h.Event {
		l.Event = &Event{Name: h.Name, Unit: h.Unit}
		if _, err := strconv.ParseFloat(h.Value, 64); err == nil && h.Value != "" {
			l.Event.Value = json.RawMessage(h.Value)
		}
		if h.NonInteractive {
			f := false
			l.Interactive = &f
		}
	}
	if len(h.Props) > 0 {
		// An object in the stored order (a map would sort the keys; the
		// engine keeps the first 30 as sent).
		b := []byte{'{'}
		for i, p := range h.Props {
			if i > 0 {
				b = append(b, ',')
			}
			k, _ := json.Marshal(p.Key)
			v, _ := json.Marshal(p.Value)
			b = append(append(append(b, k...), ':'), v...)
		}
		l.Props = append(b, '}')
	}
	return l
}

// MinDate and MaxDate bound an export of every day.
const (
	MinDate engine.Date = -1 << 31
	MaxDate engine.Date = 1<<31 - 1
)

// Export writes every stored hit of website counted under the local days
// [from, to] to w as NDJSON import lines, one day's hits in memory at a
// time, and returns how many it wrote. flush, when not nil, is called
// after each day (an HTTP response streams).
func Export(ctx context.Context, o engine.Owner, website uint32, from, to engine.Date, w io.Writer, flush func()) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n := 0
	var day time.Time
	err := o.Export(ctx, website, from, to, func(h *engine.ExportedHit) error {
		if flush != nil && !day.IsZero() && h.Time.Sub(day) > 24*time.Hour {
			if err := bw.Flush(); err != nil {
				return err
			}
			flush()
			day = h.Time
		}
		if day.IsZero() {
			day = h.Time
		}
		n++
		return enc.Encode(FromExported(h))
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// StreamTo is an http.ResponseWriter's side of a streamed export: the
// answer's status and headers are sent with its first byte, so that an
// export that fails before any (a website served by another cluster
// node) can still answer an error.
type StreamTo struct {
	W       io.Writer
	Start   func() // sends the status and headers
	started bool
}

// Write starts the answer, once, and writes p.
func (s *StreamTo) Write(p []byte) (int, error) {
	s.Begin()
	return s.W.Write(p)
}

// Begin starts the answer if it has not started.
func (s *StreamTo) Begin() {
	if !s.started {
		s.started = true
		s.Start()
	}
}

// Started reports whether the answer has started.
func (s *StreamTo) Started() bool { return s.started }
