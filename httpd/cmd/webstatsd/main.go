// Command webstatsd is the webstats server and its administration commands
// (users, backups). Run "webstatsd -h" for usage; everything is in package
// httpd/internal/cli.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/webstats/webstats/httpd/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills at once
	os.Exit(cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
