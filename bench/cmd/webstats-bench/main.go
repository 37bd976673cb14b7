// Command webstats-bench runs webstats's capacity-planning benchmarks and
// writes a Markdown report with SVG charts:
//
//	go run ./bench/cmd/webstats-bench [-quick] [-out DIR] [-runs pipeline,http,...]
//	                                  [-target URL -key KEY] [-seed N] [-note TEXT]
//	                                  [-webstatsd BIN] [-peer URL -peer-key KEY -peer-name NAME [-peer-api v1]]
//	                                  [-from report.json] [-publish]
//
// -publish, run from the repository's root, makes the report the published
// one: bench/RESULTS.md, and the summary table in README.md.
//
// The runs are defined in package bench (bench.Run); see its documentation.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/webstats/webstats/bench"
)

func main() {
	var cfg bench.RunConfig
	out := flag.String("out", "./bench-report", "directory the report is written to")
	runs := flag.String("runs", "", "comma-separated runs to do (default all): "+strings.Join(bench.AllRuns(), ","))
	note := flag.String("note", "", "a note printed under the report's header")
	publish := flag.Bool("publish", false, "run from the repository's root: make the report bench/RESULTS.md (charts and report.json in bench/results) and rewrite README.md's summary block from it")
	from := flag.String("from", "", "a report.json written by an earlier run: write (or -publish) that report instead of measuring")
	flag.BoolVar(&cfg.Quick, "quick", false, "the quick run: a smoke test of every run, under a minute")
	flag.StringVar(&cfg.Target, "target", "", "base URL of an external webstatsd for the HTTP tracking run (needs -key)")
	flag.StringVar(&cfg.Key, "key", "", "API key of the -target server")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the generated traffic")
	flag.IntVar(&cfg.Repeats, "repeats", 0, "repetitions of each throughput measurement (default 3, quick 1)")
	flag.StringVar(&cfg.Peer, "peer", "", "base URL of another server speaking Plausible's Events API, measured beside webstatsd (the peer run)")
	flag.StringVar(&cfg.PeerKey, "peer-key", "", "API key of the -peer server's Stats API (without: no query load)")
	flag.StringVar(&cfg.PeerName, "peer-name", "", "what the -peer server is, with its version, for the report")
	flag.StringVar(&cfg.PeerAPI, "peer-api", "v2", "the Stats API version of the peer run's query load: v2, or v1 for a peer that speaks only v1")
	flag.StringVar(&cfg.Webstatsd, "webstatsd", "", "the webstatsd binary the server run starts (default: built with go build from the repository the command runs in)")
	flag.Parse()
	if *runs != "" {
		cfg.Runs = strings.Split(*runs, ",")
	}
	if err := checkFlags(*from, *publish); err != nil {
		fmt.Fprintln(os.Stderr, "webstats-bench:", err)
		os.Exit(2)
	}
	if err := run(cfg, *out, *note, *from, *publish); err != nil {
		fmt.Fprintln(os.Stderr, "webstats-bench:", err)
		os.Exit(1)
	}
}

func run(cfg bench.RunConfig, out, note, from string, publish bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	var rep *bench.Report
	var err error
	if from != "" {
		rep, err = bench.ReadReport(from)
	} else {
		wants := func(run string) bool { return cfg.Runs == nil || slices.Contains(cfg.Runs, run) }
		if cfg.Webstatsd == "" && (wants(bench.RunServer) || wants(bench.RunPeer) && cfg.Peer != "") {
			dir, err := os.MkdirTemp("", "webstats-bench-bin-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			fmt.Fprintln(os.Stderr, "building webstatsd for the server run")
			if cfg.Webstatsd, err = bench.BuildWebstatsd(ctx, dir); err != nil {
				// The run reports the sections that need it as not
				// available, and why.
				cfg.WebstatsdNote = err.Error()
				fmt.Fprintln(os.Stderr, "webstats-bench:", err)
			}
		}
		rep, err = bench.Run(ctx, cfg, os.Stderr)
	}
	if err != nil {
		return err
	}
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	if err := rep.WriteMarkdown(out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "report written to %s/report.md in %s\n", out, time.Since(start).Round(time.Second))
	if publish {
		if err := rep.Publish("."); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "published to bench/RESULTS.md and README.md")
	}
	return nil
}

// checkFlags refuses what would be ignored or fail only at the end: flags
// that choose what to measure beside -from, and -publish away from the
// repository's root.
func checkFlags(from string, publish bool) error {
	if from != "" {
		var measuring []string
		flag.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "runs", "quick", "target", "key", "seed", "repeats", "webstatsd", "peer", "peer-key", "peer-name", "peer-api":
				measuring = append(measuring, "-"+f.Name)
			}
		})
		if len(measuring) > 0 {
			return fmt.Errorf("-from reads a report measured earlier: %s would be ignored", strings.Join(measuring, ", "))
		}
	}
	if publish {
		doc, err := os.ReadFile("README.md")
		if err != nil {
			return fmt.Errorf("-publish runs from the repository's root: %w", err)
		}
		if _, err := bench.ReplaceSummary(string(doc), ""); err != nil {
			return fmt.Errorf("-publish: %w in README.md", err)
		}
	}
	return nil
}
