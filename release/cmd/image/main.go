// Command image builds the preflight container image of the repository's
// HEAD commit for linux/amd64 and linux/arm64, without a container engine,
// and writes it into the output directory as an OCI layout (preflight.oci)
// and an OCI archive (preflight.oci.tar). It prints the index's digest.
// Run it in release/ with GOWORK=off (docs/deploy.md, "The image"):
//
//	go run ./cmd/image -o ../dist [-version v0.1.0]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/preflightmcp/preflight/release/internal/image"
)

func main() {
	out := flag.String("o", "dist", "output `DIR`")
	version := flag.String("version", "", "the image's `VERSION` (label and tag); default: the version the binary records")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: image [-o DIR] [-version VERSION]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out, version string) error {
	b, err := image.Build(ctx, image.Options{Version: version})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := image.Write(b, out); err != nil {
		return err
	}
	digest, err := b.Index.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%s (commit %s) in %s and %s\n", b.Ref(), b.Commit,
		filepath.Join(out, image.LayoutDir), filepath.Join(out, image.ArchiveFile))
	fmt.Println(digest)
	return nil
}
