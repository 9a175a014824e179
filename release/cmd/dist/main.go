// Command dist builds the release binaries of preflight, from a clean
// checkout of the repository's HEAD commit, into the output
// directory: preflight_VERSION_OS_ARCH.tar.gz (.zip for Windows) with the
// LICENSE and README, a CycloneDX SBOM of each binary
// (preflight_VERSION_OS_ARCH.cdx.json), and SHA256SUMS over every file
// there. scripts/release runs it in release/ with GOWORK=off
// (docs/release.md):
//
//	go run ./cmd/dist -version v0.1.0 -o ../dist [-targets linux/amd64,darwin/arm64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/preflightmcp/preflight/release/internal/dist"
)

func main() {
	out := flag.String("o", "dist", "output `DIR`")
	version := flag.String("version", "", "the release `VERSION` stamped into the binaries and naming the archives (required)")
	repo := flag.String("repo", "..", "the repository's root `DIR`")
	targets := flag.String("targets", "", "comma-separated `OS/ARCH` pairs to build; default all of linux, darwin and windows on amd64 and arm64")
	flag.Parse()
	if flag.NArg() > 0 || *version == "" {
		fmt.Fprintln(os.Stderr, "usage: dist -version VERSION [-o DIR] [-repo DIR] [-targets OS/ARCH,...]")
		os.Exit(2)
	}
	opts := dist.Options{Repo: *repo, Version: *version, Out: *out}
	if *targets != "" {
		ts, err := dist.ParseTargets(*targets)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dist:", err)
			os.Exit(2)
		}
		opts.Targets = ts
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b, err := dist.Build(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "preflight %s (commit %s) in %s\n", opts.Version, b.Commit, opts.Out)
	for _, a := range b.Archives {
		fmt.Println(a)
	}
}
