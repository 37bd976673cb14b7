package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/httpd/internal/report"
)

// reportCmd sends one report now: to test a mail setup, or to resend one.
func (c *cli) reportCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	website := fs.String("website", "", "the website's `id` (required)")
	period := fs.String("period", "", "week or month (required)")
	to := fs.String("to", "", "send to this `address` instead of the owner (the period is then not recorded as sent)")
	var mail Mail
	mail.RegisterFlags(fs)
	return func(ctx context.Context) error {
		id, err := strconv.ParseUint(*website, 10, 32)
		if err != nil || id == 0 {
			return usagef("report: -website must be a website id")
		}
		p, err := report.ParsePeriod(*period)
		if err != nil {
			return usagef("report: -period must be week or month")
		}
		if mail.SMTPAddr == "" {
			return usagef("report: -smtp-addr (or WEBSTATS_SMTP_ADDR) is required")
		}
		log := slog.New(slog.NewTextHandler(c.stderr, nil))
		return withEngine(*data, true, func(e *engine.Engine) error {
			err := report.SendNow(ctx, e, uint32(id), mail.options(p, log), *to)
			if errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("report: no website %d", id)
			}
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(c.stdout, "sent the %s report of website %d\n", p, id)
			return nil
		})
	}
}
