// Command slow is the fleet's slow upstream: an MCP server over stdio whose
// tool wait blocks, when told to, until its call is cancelled, so that
// tests can time a call out or kill the process mid-call.
//
// A call of wait with key K finds the file K.block in -dir: it removes it
// (so only one call blocks), writes its process id to K.pid and blocks
// until its context ends or -max passes; when the context ended, it
// writes K.cancelled. Without K.block it answers at once with
// "done K PID". Every call appends "K PID" to calls.log.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type waitArgs struct {
	Key string `json:"key" jsonschema:"names the call's marker files"`
}

func main() {
	dir := flag.String("dir", "", "directory of the marker files (required)")
	maxWait := flag.Duration("max", 5*time.Minute, "longest a blocked call blocks")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "slow: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *maxWait); err != nil {
		fmt.Fprintln(os.Stderr, "slow:", err)
		os.Exit(1)
	}
}

func run(dir string, maxWait time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Waits, when its key's block file exists, until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a waitArgs) (*mcp.CallToolResult, any, error) {
			if a.Key == "" || filepath.Base(a.Key) != a.Key {
				return nil, nil, fmt.Errorf("key must be a plain name")
			}
			pid := strconv.Itoa(os.Getpid())
			appendLine(filepath.Join(dir, "calls.log"), a.Key+" "+pid)
			if os.Remove(filepath.Join(dir, a.Key+".block")) == nil {
				if err := writeFile(filepath.Join(dir, a.Key+".pid"), pid); err != nil {
					return nil, nil, err
				}
				t := time.NewTimer(maxWait)
				defer t.Stop()
				select {
				case <-ctx.Done():
					_ = writeFile(filepath.Join(dir, a.Key+".cancelled"), ctx.Err().Error())
					return nil, nil, ctx.Err()
				case <-t.C:
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done " + a.Key + " " + pid}}}, nil, nil
		})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return s.Run(ctx, &mcp.StdioTransport{})
}

// writeFile writes a file whole: a reader never sees it half written.
func writeFile(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
