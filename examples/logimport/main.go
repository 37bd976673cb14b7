// Command logimport feeds an nginx or Apache access log in the "combined"
// format to a webstats engine, each line with its own time, then prints a
// summary and the top pages of the days the log covers.
//
//	go run ./examples/logimport -domain example.com /var/log/nginx/access.log
//	zcat access.log.*.gz | go run ./examples/logimport -data ./webstats-data -website 3
//
// Only successful (2xx) GET requests for pages are sent: static assets
// (stylesheets, scripts, images, fonts) and other lines are skipped before
// the engine sees them. Bots are left to the engine's pipeline, which drops
// them when the website excludes bots (the default). Hits are passed to
// Track in batches, in the order of the log.
//
// The engine is in memory unless -data names a directory (which must not be
// in use by a running webstatsd).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/webstats/webstats/engine"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "logimport:", err)
		os.Exit(1)
	}
}

// run parses the command line, imports the logs it names (stdin when none,
// or "-") and prints the summary and the top pages to out.
func run(ctx context.Context, args []string, stdin io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("logimport", flag.ContinueOnError)
	data := fs.String("data", "", "data directory (default: in memory)")
	website := fs.Uint("website", 0, "count under this website id (default: the website of -domain)")
	domain := fs.String("domain", "example.com", "without -website: the website to count under, created if missing")
	batch := fs.Int("batch", 1000, "hits per Track call")
	top := fs.Int("top", 10, "how many top pages to print")
	if err := fs.Parse(args); err != nil {
		return err
	}
	e, err := engine.Open(&engine.Options{Dir: *data})
	if err != nil {
		return err
	}
	defer e.Close()
	w, err := findWebsite(ctx, e, uint32(*website), *domain)
	if err != nil {
		return err
	}
	imp := NewImporter(e, w.ID, *batch)
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, name := range files {
		if err := importFile(ctx, imp, name, stdin); err != nil {
			return err
		}
	}
	if err := imp.Flush(ctx); err != nil {
		return err
	}
	imp.Summary.Print(out)
	return printTop(ctx, out, e, w, imp.Summary.First, imp.Summary.Last, *top)
}

func importFile(ctx context.Context, imp *Importer, name string, stdin io.Reader) error {
	if name == "-" {
		return imp.Import(ctx, stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return imp.Import(ctx, f)
}

// findWebsite returns website id, or without one the website of domain,
// creating it (and an account to own it) when missing.
func findWebsite(ctx context.Context, e *engine.Engine, id uint32, domain string) (engine.Website, error) {
	if id != 0 {
		return e.Unscoped().Website(ctx, id)
	}
	w, err := e.Unscoped().WebsiteByDomain(ctx, domain)
	if !errors.Is(err, engine.ErrNotFound) {
		return w, err
	}
	// The engine knows a website's owner by an account id; accounts
	// themselves (keys, passwords) are package identity's, not needed here.
	return e.Owner(1).CreateWebsite(ctx, engine.WebsiteInput{Domain: &domain})
}

// The reasons a line is skipped before it reaches the engine, in the order
// they are checked and printed.
const (
	SkipNotOK   = "not 2xx"
	SkipNotGET  = "not GET"
	SkipStatic  = "static asset"
	numSkipKind = 3
)

var skipOrder = [numSkipKind]string{SkipNotOK, SkipNotGET, SkipStatic}

// Summary counts what an import did with the lines it read.
type Summary struct {
	Lines       int            // lines read
	ParseErrors int            // lines that are not in the combined format
	Skipped     map[string]int // by reason (SkipNotOK, …)
	Sent        int            // hits passed to Track
	Accepted    int            // hits counted
	Dropped     map[string]int // by the engine's reason (engine.DropReason.String)
	// First and Last are the times of the first and last hits sent (zero
	// when none was).
	First, Last time.Time
}

// Print writes the summary, one count a line, reasons in a fixed order.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "lines read:     %d\n", s.Lines)
	fmt.Fprintf(w, "parse errors:   %d\n", s.ParseErrors)
	var parts []string
	n := 0
	for _, k := range skipOrder {
		if c := s.Skipped[k]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, c))
			n += c
		}
	}
	fmt.Fprintf(w, "skipped:        %d%s\n", n, inParens(parts))
	fmt.Fprintf(w, "hits sent:      %d\n", s.Sent)
	fmt.Fprintf(w, "hits accepted:  %d\n", s.Accepted)
	parts, n = nil, 0
	for _, r := range engine.DropReasons() {
		if c := s.Dropped[r.String()]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, c))
			n += c
		}
	}
	fmt.Fprintf(w, "dropped:        %d%s\n", n, inParens(parts))
}

func inParens(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Importer parses access-log lines into hits of one website and tracks them
// in batches. Call Flush after the last Import.
type Importer struct {
	// Summary is updated by Import and Flush.
	Summary Summary

	e       *engine.Engine
	website uint32
	size    int
	batch   []engine.Hit
}

// NewImporter returns an Importer that counts under website, batchSize hits
// per Track call (1000 when batchSize < 1).
func NewImporter(e *engine.Engine, website uint32, batchSize int) *Importer {
	if batchSize < 1 {
		batchSize = 1000
	}
	return &Importer{
		Summary: Summary{Skipped: make(map[string]int), Dropped: make(map[string]int)},
		e:       e, website: website, size: batchSize,
	}
}

// Import reads r to its end, line by line.
func (imp *Importer) Import(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		imp.Summary.Lines++
		h, skip, ok := ParseLine(sc.Text())
		switch {
		case !ok:
			imp.Summary.ParseErrors++
			continue
		case skip != "":
			imp.Summary.Skipped[skip]++
			continue
		}
		h.Website = imp.website
		imp.batch = append(imp.batch, h)
		if len(imp.batch) == imp.size {
			if err := imp.Flush(ctx); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}

// Flush tracks the hits parsed and not yet tracked.
func (imp *Importer) Flush(ctx context.Context) error {
	if len(imp.batch) == 0 {
		return nil
	}
	res, err := imp.e.Track(ctx, imp.batch...)
	if err != nil {
		return err
	}
	s := &imp.Summary
	for _, h := range imp.batch {
		if s.First.IsZero() || h.Time.Before(s.First) {
			s.First = h.Time
		}
		if h.Time.After(s.Last) {
			s.Last = h.Time
		}
	}
	s.Sent += len(imp.batch)
	s.Accepted += res.Accepted
	for _, r := range engine.DropReasons() {
		if n := res.Dropped[r]; n > 0 {
			s.Dropped[r.String()] += n
		}
	}
	imp.batch = imp.batch[:0]
	return nil
}

// combined matches a line of the combined log format:
//
//	203.0.113.9 - - [01/Oct/2026:09:00:00 +0000] "GET /a HTTP/1.1" 200 512 "https://ref/" "Mozilla/5.0 …"
//
// Quoted fields may hold \" (Apache) or \x22 (nginx).
var combined = regexp.MustCompile(`^(\S+) \S+ \S+ \[([^\]]+)\] "((?:[^"\\]|\\.)*)" (\d{3}) \S+ "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"`)

// staticExt lists the extensions of the paths that are not pages.
var staticExt = map[string]bool{
	".css": true, ".js": true, ".mjs": true, ".map": true,
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".svg": true, ".ico": true, ".webp": true, ".avif": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
}

// ParseLine parses a combined-format line into a hit (without its website).
// skip, when not "", says why the line is not a pageview; ok is false for a
// line that is not in the format.
func ParseLine(line string) (h engine.Hit, skip string, ok bool) {
	m := combined.FindStringSubmatch(line)
	if m == nil {
		return h, "", false
	}
	ip, err := netip.ParseAddr(m[1])
	if err != nil {
		return h, "", false
	}
	t, err := time.Parse("02/Jan/2006:15:04:05 -0700", m[2])
	if err != nil {
		return h, "", false
	}
	if m[4][0] != '2' {
		return h, SkipNotOK, true
	}
	method, rest, _ := strings.Cut(unquote(m[3]), " ")
	target, _, _ := strings.Cut(rest, " ")
	if method == "" || target == "" {
		return h, "", false
	}
	if method != "GET" {
		return h, SkipNotGET, true
	}
	p, _, _ := strings.Cut(target, "?")
	if staticExt[strings.ToLower(path.Ext(p))] {
		return h, SkipStatic, true
	}
	h = engine.Hit{Time: t, URL: target, IP: ip, UserAgent: dash(unquote(m[6])), Referrer: dash(unquote(m[5]))}
	return h, "", true
}

// unquote undoes the escapes of a quoted log field.
func unquote(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	return strings.NewReplacer(`\"`, `"`, `\x22`, `"`, `\\`, `\`).Replace(s)
}

// dash maps the log's "-" (no value) to "".
func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// printTop prints the top n pages of w over the local days from first to
// last.
func printTop(ctx context.Context, out io.Writer, e *engine.Engine, w engine.Website, first, last time.Time, n int) error {
	if first.IsZero() {
		fmt.Fprintln(out, "\nno pages")
		return nil
	}
	loc, err := time.LoadLocation(w.Timezone)
	if err != nil {
		return err
	}
	from, to := engine.DateFromTime(first.In(loc)), engine.DateFromTime(last.In(loc))
	if int64(to)-int64(from) >= engine.MaxRangeDays {
		from = to - engine.MaxRangeDays + 1
	}
	page, err := e.Unscoped().Stat(ctx, engine.StatQuery{Website: w.ID, Name: "page", From: from, To: to, SortBy: "count", PerPage: n})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\ntop pages of %s, %s to %s:\n", w.Domain, from, to)
	for _, r := range page.Rows {
		fmt.Fprintf(out, "%7d  %s\n", r.Count, r.Value)
	}
	return nil
}
