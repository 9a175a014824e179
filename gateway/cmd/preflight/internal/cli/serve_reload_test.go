package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// eventually checks cond until it holds, failing the test after a minute
// (a bound on a hang, not a timed assertion).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeReload serves a preflight YAML file without -http: it listens
// at the file's listen.http. A SIGHUP sent to the process reloads the file
// (whose server's arguments come from an environment variable that
// changed, so only the signal can show it): the server is replaced and
// calls reach the new one. A file that does not load is logged with the
// file, the key and what is allowed, and the running configuration keeps
// serving. A file change that adds a server reloads by itself: both
// servers' tools are served, prefixed.
func TestServeReload(t *testing.T) {
	bin := buildExample(t, "files")
	one, two := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(one, "hello.txt"), "from root one\n")
	writeFile(t, filepath.Join(two, "hello.txt"), "from root two\n")
	t.Setenv("PREFLIGHT_TEST_ROOT", one)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	path := filepath.Join(t.TempDir(), "preflight.yaml")
	server := func(name, root string) string {
		return fmt.Sprintf("  %s:\n    command: %q\n    args: [\"-root\", %q]\n", name, bin, root)
	}
	writeFile(t, path, "listen:\n  http: "+addr+"\nservers:\n"+server("files", "${PREFLIGHT_TEST_ROOT}"))

	// The signal must never reach the test binary's default action.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	url, _, stderr, stop := runServe(t, "-config", path)
	if url != "http://"+addr+"/mcp" {
		t.Errorf("serving at %s, not at the file's listen.http %s", url, addr)
	}

	p := wiretest.Stateless(url, nil)
	defer p.Close()
	read := func(tool string) string {
		r := p.Call(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"path": "hello.txt", "action": "read"}})
		return string(r.Raw)
	}
	tools := func() []string {
		var names []string
		r := p.Call(t, "tools/list", nil)
		for _, tl := range r.Result["tools"].([]any) {
			names = append(names, tl.(map[string]any)["name"].(string))
		}
		return names
	}
	if got := read("manage_files"); !strings.Contains(got, "from root one") {
		t.Fatalf("before the reload: %s", got)
	}

	// SIGHUP, with the file unchanged but its environment changed.
	t.Setenv("PREFLIGHT_TEST_ROOT", two)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reload on SIGHUP", func() bool {
		return strings.Contains(stderr.String(), `"trigger":"signal"`) && strings.Contains(read("manage_files"), "from root two")
	})
	if !strings.Contains(stderr.String(), `"replaced":["files"]`) {
		t.Errorf("the reload does not say what changed:\n%s", stderr.String())
	}

	// A file that does not load.
	writeFile(t, path, "listen:\n  http: "+addr+"\nservers:\n"+server("files", two)+"    trsut: untrusted\n")
	eventually(t, "the bad file to be logged", func() bool { return strings.Contains(stderr.String(), "config not reloaded") })
	if log := stderr.String(); !strings.Contains(log, "trsut") || !strings.Contains(log, "did you mean trust?") || !strings.Contains(log, "preflight.yaml") {
		t.Errorf("the bad file's error lacks the file, the key or what is allowed:\n%s", log)
	}
	if got := read("manage_files"); !strings.Contains(got, "from root two") {
		t.Errorf("after a bad file: %s", got)
	}

	// A file change that adds a server.
	writeFile(t, path, "listen:\n  http: "+addr+"\nservers:\n"+server("files", two)+server("more", one))
	eventually(t, "the added server", func() bool {
		n := tools()
		return slices.Contains(n, "files__manage_files") && slices.Contains(n, "more__manage_files")
	})
	if got := read("more__manage_files"); !strings.Contains(got, "from root one") {
		t.Errorf("the added server: %s", got)
	}
	if got := read("files__manage_files"); !strings.Contains(got, "from root two") {
		t.Errorf("the kept server: %s", got)
	}

	if code := stop(); code != exitOK {
		t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
	}
}

// TestServeFlagWinsOverListen: -http on the command line wins over the
// file's listen.http (here an address already taken, which serve would
// fail to listen on).
func TestServeFlagWinsOverListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg, err := config.Parse("preflight.yaml", []byte("listen:\n  http: "+taken.Addr().String()+"\nservers:\n  late: {url: \"http://127.0.0.1:1/mcp\", connect: lazy}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &serveCmd{config: "preflight.yaml", logLevel: "info",
		watch: func(ctx context.Context, _ string, _ *config.WatchOptions, fn func(*config.Config, error)) error {
			fn(cfg, nil)
			<-ctx.Done()
			return nil
		}}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse([]string{"-http", "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- c.run(ctx, &env{stdin: strings.NewReader(""), stdout: outW, stderr: newTermWriter(io.Discard, textOutput)}, invocation{})
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	var printed strings.Builder
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Stop with") {
			break
		}
	}
	go io.Copy(io.Discard, outR)
	m := regexp.MustCompile(`serving MCP at http://(\S+)/mcp`).FindStringSubmatch(printed.String())
	if m == nil {
		cancel()
		t.Fatalf("not serving: %v\n%s", <-done, printed.String())
	}
	if m[1] == taken.Addr().String() {
		t.Errorf("serving at the file's listen.http %s, not at -http", m[1])
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
