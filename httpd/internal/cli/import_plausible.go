package cli

// webstatsd import -from plausible (SPEC §14): Plausible's export zip into
// a website's imported layer, offline on the data directory. The zip is
// read and validated whole (package plausiblezip) before anything is
// stored.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/plausiblezip"
)

// importCmd is webstatsd import.
func (c *cli) importCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	site := fs.String("site", "", "the website's `domain` (required)")
	from := fs.String("from", "", "the export's `format`: plausible (required)")
	return func(ctx context.Context) error {
		switch {
		case *site == "":
			return usagef("import: -site is required")
		case *from != "plausible":
			return usagef("import: -from %q: only plausible is known here", *from)
		case len(c.args) == 0:
			return usagef("import: name the export zip")
		}
		return withEngine(*data, true, func(e *engine.Engine) error {
			for _, file := range c.args {
				if err := importPlausible(ctx, e, *site, file, c.stderr); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// importPlausible imports the Plausible export zip file into the imported
// layer of the website of domain, and says what it did on out.
func importPlausible(ctx context.Context, e *engine.Engine, domain, file string, out io.Writer) error {
	start := time.Now()
	o := e.Unscoped()
	w, err := o.WebsiteByDomain(ctx, domain)
	if err != nil {
		return fmt.Errorf("import: website %s: %w", domain, err)
	}
	x, err := plausiblezip.ReadFile(file)
	if err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	imp, err := o.ImportPlausible(ctx, w.ID, x, filepath.Base(file))
	if err != nil {
		return fmt.Errorf("import: %s: %w", file, err)
	}
	fmt.Fprintf(out, "webstatsd: imported %s into %s as import %d: %d daily rows, %s to %s, in %v\n",
		file, domain, imp.ID, imp.Rows, imp.From, imp.To, time.Since(start).Round(time.Millisecond))
	return nil
}
