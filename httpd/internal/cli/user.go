package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/webstats/webstats/engine"
	"github.com/webstats/webstats/engine/identity"
)

// The commands below open the data directory directly, which a running
// server holds locked: they then fail at once with openError's message.

func (c *cli) userAddCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	email := fs.String("email", "", "the account's email address (required)")
	name := fs.String("name", "", "the account's name (default: the part of the email before the @)")
	return func(ctx context.Context) error {
		if *email == "" {
			return usagef("user add: -email is required")
		}
		// No existence check: creating the first account before the first
		// serve is fine (serve then creates no admin account).
		return withEngine(*data, false, func(e *engine.Engine) error {
			_, key, err := identity.Must(e).CreateAccount(ctx, *name, *email)
			if err != nil {
				return validationMessage(err)
			}
			fmt.Fprintln(c.stdout, key)
			return nil
		})
	}
}

func (c *cli) userListCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	return func(ctx context.Context) error {
		return withEngine(*data, true, func(e *engine.Engine) error {
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tCREATED")
			for _, a := range identity.Must(e).Accounts(ctx) {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", a.ID, a.Email, a.Name, a.CreatedAt.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		})
	}
}

func (c *cli) userRotateKeyCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	email := fs.String("email", "", "the account's email address (required)")
	return func(ctx context.Context) error {
		if *email == "" {
			return usagef("user rotate-key: -email is required")
		}
		return withAccount(ctx, *data, *email, func(e *engine.Engine, a identity.Account) error {
			key, err := identity.Must(e).RotateKey(ctx, a.ID)
			if err != nil {
				return err
			}
			fmt.Fprintln(c.stdout, key)
			return nil
		})
	}
}

func (c *cli) userSetPasswordCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	email := fs.String("email", "", "the account's email address (required)")
	return func(ctx context.Context) error {
		if *email == "" {
			return usagef("user set-password: -email is required")
		}
		pw, err := c.readPassword()
		if err != nil {
			return fmt.Errorf("user set-password: read the password: %w", err)
		}
		return withAccount(ctx, *data, *email, func(e *engine.Engine, a identity.Account) error {
			if _, err := identity.Must(e).SetPassword(ctx, a.ID, "", pw, true); err != nil {
				return validationMessage(err)
			}
			fmt.Fprintf(c.stderr, "webstatsd: password of %s set\n", a.Email)
			return nil
		})
	}
}

func (c *cli) userSetEmailCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	email := fs.String("email", "", "the account's email address (required)")
	to := fs.String("new", "", "the new email address (required)")
	return func(ctx context.Context) error {
		if *email == "" || *to == "" {
			return usagef("user set-email: -email and -new are required")
		}
		return withAccount(ctx, *data, *email, func(e *engine.Engine, a identity.Account) error {
			a, err := identity.Must(e).SetEmail(ctx, a.ID, *to)
			if err != nil {
				return validationMessage(err)
			}
			fmt.Fprintf(c.stderr, "webstatsd: the email of account %d is now %s\n", a.ID, a.Email)
			return nil
		})
	}
}

// readPassword reads one line from stdin, without its line ending: from
// a terminal without echo (after a prompt on stderr), else from a pipe. At
// most 4 KiB are read.
func (c *cli) readPassword() (string, error) {
	if f, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(c.stderr, "New password: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(c.stderr)
		return string(b), err
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c.stdin, 4096), 4096).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (c *cli) backupCmd(fs *flag.FlagSet) func(context.Context) error {
	data := dataFlag(fs)
	to := fs.String("to", "", "the `directory` to write the copy to; it must not exist (required)")
	return func(ctx context.Context) error {
		if *to == "" {
			return usagef("backup: -to is required")
		}
		if _, err := os.Stat(*to); err == nil {
			return fmt.Errorf("backup: %s exists already; name a new directory", *to)
		}
		return withEngine(*data, true, func(e *engine.Engine) error {
			if err := e.Backup(ctx, *to); err != nil {
				return err
			}
			fmt.Fprintf(c.stderr, "webstatsd: backup of %s written to %s\n", *data, *to)
			return nil
		})
	}
}

// dataFlag registers -data, shared with serve (and WEBSTATS_DATA).
func dataFlag(fs *flag.FlagSet) *string {
	return fs.String("data", defaultData, "data `directory`")
}

// withEngine opens the engine of dir, calls fn, and closes the engine. With
// mustExist, a missing dir is an error instead of a new, empty store.
func withEngine(dir string, mustExist bool, fn func(*engine.Engine) error) (err error) {
	if mustExist {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("data directory %s does not exist", dir)
		}
	}
	e, err := engine.Open(&engine.Options{Dir: dir, SnapshotEvery: -1})
	if err != nil {
		return openError(dir, err)
	}
	defer func() {
		if cerr := e.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", dir, cerr)
		}
	}()
	if _, err := identity.Open(e); err != nil {
		return openError(dir, err)
	}
	return fn(e)
}

// openError explains a failure to open the data directory; a directory
// locked by a running server gets a message that says what to do.
func openError(dir string, err error) error {
	if errors.Is(err, engine.ErrLocked) {
		return fmt.Errorf("data directory %s is in use by a running webstatsd; stop it first, or use the API", dir)
	}
	return fmt.Errorf("open data directory %s: %w", dir, err)
}

// validationMessage turns an engine validation error into its messages.
func validationMessage(err error) error {
	verr, ok := errors.AsType[*engine.ValidationError](err)
	if !ok {
		return err
	}
	msgs := make([]string, len(verr.Fields))
	for i, f := range verr.Fields {
		msgs[i] = f.Msg
	}
	return errors.New(strings.Join(msgs, " "))
}

// withAccount runs fn on the engine of data directory dir, opened for
// writing, with the account whose address is email.
func withAccount(ctx context.Context, dir, email string, fn func(*engine.Engine, identity.Account) error) error {
	return withEngine(dir, true, func(e *engine.Engine) error {
		a, err := identity.Must(e).AccountByEmail(ctx, email)
		if errors.Is(err, engine.ErrNotFound) {
			return fmt.Errorf("no account has the email %q", email)
		} else if err != nil {
			return err
		}
		return fn(e, a)
	})
}
