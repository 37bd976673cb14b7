// Package cli is the command line of webstatsd: the serve command (the
// default) and the user and backup commands of SPEC §5. The binary's main
// only calls Main, so that everything here can be tested in-process.
//
// # Commands
//
// Every command is one entry of the commands table: its synopsis, a one-line
// summary, and a setup function that registers its flags on a flag.FlagSet
// and returns the action to run once they are parsed. The usage text is
// generated from the same table, so a new command (such as the report
// command of SPEC §8) is one entry plus one function.
//
// # Environment
//
// Every flag of serve is also read from an environment variable:
// WEBSTATS_ and the flag's name upper-cased with '-' replaced by '_'
// (-addr ↔ WEBSTATS_ADDR, -rate-limit ↔ WEBSTATS_RATE_LIMIT). A flag on the
// command line beats the environment, which beats the default. An empty
// variable counts as unset. The other commands read the variables of the
// serve flags they share (-data ↔ WEBSTATS_DATA), so a shell configured for
// the server drives them too.
//
// # Exit codes
//
// 0 on success (and for -h), 1 when a command fails, 2 for a usage error
// (unknown command or flag, a bad flag value, a missing required flag).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// The exit codes of Main.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// envPrefix starts the name of every environment variable read.
const envPrefix = "WEBSTATS_"

// Main runs webstatsd with args (without the program name) and returns the
// exit code. Output meant for scripts (API keys, listings) goes to stdout;
// logs, messages and errors to stderr. ctx is the life of the process:
// serve shuts down gracefully when it is cancelled.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdin: os.Stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	return c.main(ctx, args)
}

// cli holds the process's outputs and environment for the commands.
type cli struct {
	stdin          io.Reader // user set-password reads the password from it
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	args           []string // the files after import's flags
}

// command is one (sub)command of webstatsd.
type command struct {
	name     string // as typed: "serve", "user add"
	synopsis string // the arguments after "webstatsd"
	summary  string // one line
	// setup registers the command's flags on fs and returns the action to
	// run once they are parsed. The action's error is printed by Main;
	// a *usageError makes the exit code 2.
	setup func(c *cli, fs *flag.FlagSet) func(ctx context.Context) error
	// args: the command takes arguments after its flags (import's files).
	args bool
}

// commands lists every command, in the order of the usage text.
var commands = []command{
	{"serve", "[serve] [flags]", "run the server (the default command)", (*cli).serveCmd, false},
	{"user add", "user add -data DIR -email E [-name N]", "create an account and print its API key, alone on stdout", (*cli).userAddCmd, false},
	{"user list", "user list -data DIR", "list the accounts: id, email, name, created", (*cli).userListCmd, false},
	{"user rotate-key", "user rotate-key -data DIR -email E", "replace every API key of an account by one new key and print it; the old ones stop working and its sessions end", (*cli).userRotateKeyCmd, false},
	{"user set-password", "user set-password -data DIR -email E", "set an account's password, read from stdin (one line); its sessions end", (*cli).userSetPasswordCmd, false},
	{"user set-email", "user set-email -data DIR -email E -new E2", "change an account's email address (no mail proves it: the operator vouches); its reset links are spent", (*cli).userSetEmailCmd, false},
	{"backup", "backup -data DIR -to DIR2", "write a consistent copy of the data directory to DIR2 (which must not exist)", (*cli).backupCmd, false},
	{"report", "report -data DIR -website ID -period week|month [-to ADDR] [-smtp-addr ...]", "send one email report of the last complete period now (to the owner, or to ADDR)", (*cli).reportCmd, false},
	{"import", "import -site DOMAIN -from goatcounter|umami|ndjson|plausible [-data DIR | -url URL -key KEY] FILE...", "import a website's history from a peer's export or webstats' own (checked whole first; resumable)", (*cli).importCmd, true},
	{"export", "export -site DOMAIN [-from DAY] [-to DAY] [-data DIR | -url URL -key KEY] > FILE", "write every hit of a website as NDJSON import lines to stdout", (*cli).exportCmd, false},
}

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// main dispatches args to a command.
func (c *cli) main(ctx context.Context, args []string) int {
	var name string
	switch {
	case len(args) == 0 || strings.HasPrefix(args[0], "-"):
		name = "serve"
	case args[0] == "help":
		c.usage(c.stdout)
		return exitOK
	case args[0] == "user":
		if len(args) < 2 {
			return c.fail(usagef("user: missing subcommand (add, list, rotate-key, set-password or set-email)"))
		}
		if isHelp(args[1]) {
			c.usage(c.stdout)
			return exitOK
		}
		name, args = "user "+args[1], args[2:]
	default:
		name, args = args[0], args[1:]
	}
	for _, cmd := range commands {
		if cmd.name == name {
			return c.run(ctx, cmd, args)
		}
	}
	return c.fail(usagef("unknown command %q", name))
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// run parses the flags of cmd from args and the environment, and runs it.
func (c *cli) run(ctx context.Context, cmd command, args []string) int {
	fs := newFlagSet(cmd.name)
	action := cmd.setup(c, fs)
	if err := c.parse(fs, args, cmd.args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.usage(c.stdout)
			return exitOK
		}
		return c.fail(err)
	}
	return c.fail(action(ctx))
}

// fail prints err, if any, and returns its exit code.
func (c *cli) fail(err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(c.stderr, "webstatsd: %v\n", err)
	if _, ok := errors.AsType[*usageError](err); ok {
		fmt.Fprintln(c.stderr)
		c.usage(c.stderr)
		return exitUsage
	}
	return exitError
}

// newFlagSet returns a flag set that prints nothing itself: Main prints the
// errors and the usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse sets the flags of fs from the environment, then from args. Only
// flags that serve has too are read from the environment.
func (c *cli) parse(fs *flag.FlagSet, args []string, takesArgs bool) error {
	var err error
	shared := serveFlagNames()
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || !shared[f.Name] {
			return
		}
		name := EnvName(f.Name)
		if v, ok := c.lookupEnv(name); ok && v != "" {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("%s=%q: invalid value for -%s: %v", name, v, f.Name, e)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%s: %v", fs.Name(), err)
	}
	if fs.NArg() > 0 && !takesArgs {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// EnvName returns the environment variable of a flag: "rate-limit" →
// "WEBSTATS_RATE_LIMIT".
func EnvName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// serveFlagNames returns the names of serve's flags.
func serveFlagNames() map[string]bool {
	fs := newFlagSet("serve")
	new(Config).RegisterFlags(fs)
	names := make(map[string]bool)
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	return names
}

// usage writes the usage text: every command and every flag.
func (c *cli) usage(w io.Writer) {
	fmt.Fprintf(w, "webstatsd is a self-hosted website statistics server.\n\nUsage:\n\n")
	for _, cmd := range commands {
		fmt.Fprintf(w, "  webstatsd %s\n    \t%s\n", cmd.synopsis, cmd.summary)
	}
	fmt.Fprintf(w, "  webstatsd help\n    \tshow this help\n")
	fmt.Fprintf(w, "\nEvery flag of serve can also be set by an environment variable, %sFLAG_NAME\n", envPrefix)
	fmt.Fprintf(w, "(-addr ↔ WEBSTATS_ADDR, -rate-limit ↔ WEBSTATS_RATE_LIMIT); a flag beats the\n")
	fmt.Fprintf(w, "environment, which beats the default. The other commands read the variables\n")
	fmt.Fprintf(w, "of the flags they share with serve (-data ↔ WEBSTATS_DATA).\n")
	for _, cmd := range commands {
		fs := newFlagSet(cmd.name)
		cmd.setup(&cli{stdout: io.Discard, stderr: io.Discard, lookupEnv: os.LookupEnv}, fs)
		fmt.Fprintf(w, "\nFlags of %s:\n", cmd.name)
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}
