package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/upstream"
)

// defaultServeAddr is where serve listens unless told otherwise: loopback,
// on a port few other tools use.
const defaultServeAddr = "127.0.0.1:7780"

// serveReadyTimeout bounds how long serve waits for its upstreams before it
// prints what it serves (it serves meanwhile, and goes on if some are late).
const serveReadyTimeout = 15 * time.Second

// configWatcher reads a configuration file and calls fn with it, then
// again whenever it changes or reload delivers a value, until ctx is done
// (package gateway/config's Watch).
type configWatcher func(ctx context.Context, path string, opts *config.WatchOptions, fn func(*config.Config, error)) error

type serveCmd struct {
	addr     addrFlag
	stdio    bool
	config   string
	data     string
	logLevel string

	watch configWatcher    // nil: config.Watch
	hup   <-chan os.Signal // nil: SIGHUP, when serving a configuration

	// common is empty: serve runs until it is stopped and writes no
	// report, so it has neither -format, -o nor -timeout.
	common
}

// addrFlag is -http: an address, and whether the command line gave it.
type addrFlag struct {
	value string
	set   bool
}

func (a *addrFlag) String() string     { return a.value }
func (a *addrFlag) Set(v string) error { a.value, a.set = v, true; return nil }

func (c *serveCmd) synopsis() string {
	return `usage: preflight serve [-http ADDR | -stdio] [-config FILE] [-data DIR] [-log-level LEVEL]

Runs the preflight gateway: one MCP endpoint in front of the upstream MCP
servers of FILE (any language, any transport: stdio commands, streamable
HTTP, HTTP+SSE), with their tools, prompts and resources aggregated (names
prefixed server__name when there are several upstreams), tools/resolve for
every tool, and both protocol eras (2026-07-28 and 2025-11-25) on either
side.

It serves streamable HTTP at http://ADDR/mcp (both eras on one URL) and a
JSON health report at http://ADDR/healthz; with -stdio it serves one client
over standard input and output instead, as desktop clients that start their
servers as processes expect (logs go to standard error).

Without -config it serves a built-in setup: the two example servers of this
repository (manage_files, and folders with delete_folder, rename_folder and
describe_folder) on a data directory of its own (-data), and prints where to
point a client.

With -config it reloads the file when it changes and on SIGHUP, without
dropping calls in flight: servers added are connected, servers removed or
changed are stopped (or replaced) once their calls in flight end, servers
unchanged are left running, and the new rules, overrides and trust apply
to the next call. A file that does not load is logged with its error and
the running configuration stays. listen (and -http, -stdio) take effect
only at start. Without -http, listen.http of the file is where it serves.

Logs are JSON on standard error, one record per call. Interrupt (Ctrl-C) or
SIGTERM stops it after the calls in flight finish.

Exit status: 0 stopped by an interrupt; 1 the gateway failed (the address
is taken, an upstream setup failed); 2 usage error; 3 the configuration
could not be read.
`
}

func (c *serveCmd) flags(fs *flag.FlagSet) {
	c.untilStopped = true
	c.addr.value = defaultServeAddr
	fs.Var(&c.addr, "http", "serve streamable HTTP at `ADDR` (host:port; loopback unless you need otherwise); without it, listen.http of the configuration")
	fs.BoolVar(&c.stdio, "stdio", false, "serve one client over standard input and output instead of HTTP")
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (preflight YAML, or the mcpServers JSON of Claude Desktop, Claude Code or Cursor, or VS Code's servers); empty serves the built-in setup")
	fs.StringVar(&c.data, "data", "", "data `DIR` of the built-in setup (default: preflight/serve under the user's cache directory)")
	fs.StringVar(&c.logLevel, "log-level", "info", "least severe log `LEVEL`: debug, info, warn or error")
}

func (c *serveCmd) run(ctx context.Context, env *env, inv invocation) error {
	stderr := env.stderr
	if len(inv.args) > 0 || inv.dashDash {
		return usagef("serve takes no arguments")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return usagef("-log-level %q: want debug, info, warn or error", c.logLevel)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))

	if c.config != "" {
		if c.data != "" {
			return usagef("-data is for the built-in setup; a configuration file names its own servers")
		}
		return c.serveConfig(ctx, env, logger)
	}
	dir, err := c.dataDir()
	if err != nil {
		return err
	}
	opts, cleanup, err := builtinSetup(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	opts.Logger = logger
	g, err := c.start(opts)
	if err != nil {
		return err
	}
	defer g.Close()
	return c.serve(ctx, env, g, logger, "built-in setup, data in "+dir, c.addr.value, nil)
}

// start builds and starts the gateway.
func (c *serveCmd) start(opts *gateway.Options) (*gateway.Gateway, error) {
	if opts.Version == "" {
		opts.Version = "devel"
	}
	g, err := gateway.New(opts)
	if err != nil {
		return nil, err
	}
	g.Start()
	return g, nil
}

// serve serves g over stdio or HTTP at addr until ctx is done, passing
// each value of updates to apply meanwhile.
func (c *serveCmd) serve(ctx context.Context, env *env, g *gateway.Gateway, logger *slog.Logger, setup, addr string, updates <-chan func()) error {
	served := make(chan error, 1)
	if c.stdio {
		logger.Info("serving over stdio", "setup", setup)
		go func() { served <- endpoint.ServeStdio(ctx, g.Server()) }()
	} else {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		go func() { served <- g.Serve(ctx, ln) }()
		base := "http://" + ln.Addr().String()
		wctx, cancel := context.WithTimeout(ctx, serveReadyTimeout)
		_ = g.WaitReady(wctx) // a late upstream shows as such below
		cancel()
		printServing(env.stdout, base, setup, g.Health())
	}
	for {
		select {
		case err := <-served:
			logger.Info("stopped")
			return err
		case apply := <-updates:
			apply()
		}
	}
}

// serveConfig serves the configuration file, reloading it when it changes
// and on SIGHUP.
func (c *serveCmd) serveConfig(ctx context.Context, env *env, logger *slog.Logger) error {
	watch := c.watch
	if watch == nil {
		watch = config.Watch
	}
	hup := c.hup
	if hup == nil {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGHUP)
		defer signal.Stop(sig)
		hup = sig
	}
	// The watch runs on its own goroutine; what it reads is applied on
	// serve's, one version at a time.
	wctx, stopWatch := context.WithCancel(ctx)
	type version struct {
		cfg *config.Config
		err error
	}
	versions := make(chan version)
	watched := make(chan error, 1)
	go func() {
		watched <- watch(wctx, c.config, &config.WatchOptions{Reload: hup, Logger: logger}, func(cfg *config.Config, err error) {
			select {
			case versions <- version{cfg, err}:
			case <-wctx.Done():
			}
		})
	}()
	defer func() {
		stopWatch()
		<-watched
	}()
	var first *config.Config
	select {
	case v := <-versions:
		first = v.cfg
	case err := <-watched:
		watched <- nil // for the deferred wait
		if err == nil {
			err = ctx.Err()
		}
		return &exitError{code: exitFailure, err: err}
	}
	opts, err := optionsFromConfig(c.config, first)
	if err != nil {
		return err
	}
	opts.Logger = logger
	addr := c.addr.value
	if !c.addr.set && first.Listen.HTTP != "" {
		addr = first.Listen.HTTP
	}
	if first.Listen.Stdio && !c.stdio {
		logger.Warn("listen.stdio is not served by itself: start the gateway with -stdio to serve stdio", "file", c.config)
	}
	g, err := c.start(opts)
	if err != nil {
		return err
	}
	defer g.Close()

	// Each new version is applied on serve's goroutine.
	running := first
	updates := make(chan func())
	relayed := make(chan struct{})
	defer func() {
		stopWatch()
		<-relayed
	}()
	go func() {
		defer close(relayed)
		for {
			var v version
			select {
			case v = <-versions:
			case <-wctx.Done():
				return
			}
			select {
			case updates <- func() { running = c.reload(ctx, g, logger, running, v.cfg, v.err) }:
			case <-wctx.Done():
				return
			}
		}
	}()
	return c.serve(ctx, env, g, logger, "configuration "+c.config, addr, updates)
}

// reload applies next, a new version of the configuration (or the error
// that kept it from loading), to g, and returns the configuration now in
// force.
func (c *serveCmd) reload(ctx context.Context, g *gateway.Gateway, logger *slog.Logger, running, next *config.Config, err error) *config.Config {
	if err != nil {
		// Watch logged it with the file, the key and what is allowed.
		return running
	}
	opts, err := optionsFromConfig(c.config, next)
	if err != nil {
		logger.Error("configuration not reloaded: the running one stays in force", "file", c.config, "error", err)
		return running
	}
	opts.Logger = logger
	opts.Version = "devel"
	var added, removed, changed []string
	for _, name := range next.Names() {
		if old, ok := running.Servers[name]; !ok {
			added = append(added, name)
		} else if !reflect.DeepEqual(old, next.Servers[name]) {
			changed = append(changed, name)
		}
	}
	for _, name := range running.Names() {
		if _, ok := next.Servers[name]; !ok {
			removed = append(removed, name)
		}
	}
	logger.Info("configuration changed", "file", c.config, "serversAdded", added, "serversRemoved", removed, "serversChanged", changed)
	if !reflect.DeepEqual(running.Listen, next.Listen) {
		logger.Warn("listen changed: it takes effect at start; restart the gateway to apply it", "file", c.config)
	}
	if !reflect.DeepEqual(running.Disclosure, next.Disclosure) || !reflect.DeepEqual(running.Redis, next.Redis) {
		logger.Info("disclosure changed: the disclosed servers apply now; turning it on or off, its store and ttl take effect at start", "file", c.config)
	}
	if err := g.Reload(ctx, opts); err != nil {
		logger.Error("configuration not fully reloaded", "file", c.config, "error", err)
	}
	return next
}

// dataDir returns the built-in setup's data directory, creating it.
func (c *serveCmd) dataDir() (string, error) {
	dir := c.data
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no user cache directory for the built-in setup's data (%v): give one with -data", err)
		}
		dir = filepath.Join(cache, "preflight", "serve")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// builtinSetup returns the options of the built-in setup: the two example
// servers, each in this process on a subdirectory of dir (created with a
// few sample files on first use).
func builtinSetup(dir string) (*gateway.Options, func(), error) {
	var roots []*os.Root
	cleanup := func() {
		for _, r := range roots {
			r.Close()
		}
	}
	open := func(sub string, seed map[string]string) (*os.Root, error) {
		p := filepath.Join(dir, sub)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			for name, content := range seed {
				f := filepath.Join(p, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
					return nil, err
				}
				if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
					return nil, err
				}
			}
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(p)
		if err == nil {
			roots = append(roots, r)
		}
		return r, err
	}
	files, err := open("files", map[string]string{
		"notes.txt": "Notes kept by the manage_files example behind the preflight gateway.\n",
	})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	folders, err := open("folders", map[string]string{
		"drafts/plan.txt":       "A plan.\n",
		"archive/2025/notes.md": "# Old notes\n",
		"empty/.keep":           "",
	})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	inProcess := func(mk func() *mcp.Server) func(context.Context) (mcp.Transport, error) {
		return func(ctx context.Context) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			if _, err := mk().Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		}
	}
	return &gateway.Options{
		Name: "preflight",
		Upstreams: []gateway.UpstreamSpec{
			{Name: "files", Connect: inProcess(func() *mcp.Server { return filetool.NewServer(files, nil) })},
			{Name: "folders", Connect: inProcess(func() *mcp.Server { return foldertool.NewServer(folders, nil) })},
		},
	}, cleanup, nil
}

// printServing tells the user where the gateway is and how to connect.
func printServing(w io.Writer, base, setup string, h gateway.Health) {
	url := base + gateway.MCPPath
	fmt.Fprintf(w, "preflight gateway serving MCP at %s (protocol 2026-07-28 and 2025-11-25)\n", url)
	fmt.Fprintf(w, "health: %s%s\n", base, gateway.HealthPath)
	fmt.Fprintf(w, "upstreams (%s):\n", setup)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, u := range h.Upstreams {
		era := u.Era
		if era == "" {
			era = "-"
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s", upstream.Sanitize(u.Name), u.State, era, plural(u.Tools, "tool"))
		if u.LastError != "" && u.State != upstream.StateUp {
			line += "\t" + upstream.Sanitize(u.LastError)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	fmt.Fprintf(w, "%s, %s, %s served.\n", plural(h.Tools, "tool"), plural(h.Prompts, "prompt"), plural(h.Resources, "resource"))
	fmt.Fprintf(w, "Point a client at it, for example:\n")
	fmt.Fprintf(w, "  claude mcp add --transport http preflight %s\n", url)
	fmt.Fprintf(w, "  npx @modelcontextprotocol/inspector --cli %s --transport http --method tools/list\n", url)
	fmt.Fprintf(w, "Stop with Ctrl-C.\n")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, strings.TrimSuffix(what, "s"))
}
