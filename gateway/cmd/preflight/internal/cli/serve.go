package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/examples/folders/foldertool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/loopback"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/redislog"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
)

// defaultServeAddr is where serve listens unless told otherwise: loopback,
// on a port few other tools use.
const defaultServeAddr = "127.0.0.1:7780"

// serveReadyTimeout bounds how long serve waits for its upstreams before it
// prints what it serves (it serves meanwhile, and goes on if some are late).
// A variable for tests.
var serveReadyTimeout = 15 * time.Second

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
	dryRun   bool
	reset    bool
	pprof    string

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
	return `usage: preflight serve [-http ADDR | -stdio] [-config FILE] [-data DIR] [-reset] [-dry-run] [-log-level LEVEL]

Runs the preflight gateway: one MCP endpoint in front of the upstream MCP
servers of FILE (any language, any transport: stdio commands, streamable
HTTP, HTTP+SSE), with their tools, prompts and resources aggregated (names
prefixed server__name when there are several upstreams), tools/resolve for
every tool, and both protocol eras (2026-07-28 and 2025-11-25) on either
side.

It serves streamable HTTP at http://ADDR/mcp (both eras on one URL), a
JSON health report at http://ADDR/healthz and, on a loopback ADDR, the
approval page at http://ADDR/ui: calls that need a person's approval wait
there, and serve prints a one-time login link to sign in with. With -stdio
it serves one client over standard input and output, as desktop clients
that start their servers as processes expect: it first waits (at most 15 s)
for its upstreams, so that the client lists every tool at once; logs go to
standard error, with the approval page's address and login link, and the
page is served on a loopback port of its own (with -http, HTTP is served
there as well). listen.stdio in a configuration serves stdio beside HTTP.
Serving off loopback needs the configuration's auth section.

Without -config it serves a built-in setup: the two example servers of this
repository (manage_files, and folders with delete_folder, rename_folder and
describe_folder) on a data directory of its own (-data), and prints where to
point a client. -reset puts the examples' files back as they were at first
(notes.txt and the folders), so a walkthrough can start over; the audit log,
the pins and the approvals stay.

Every upstream tool's definition is pinned at first sight (see preflight
pins): in the file of the configuration's pins section (default pins.db in
the user's state directory), or pins.db in the built-in setup's data
directory. A later change is held back as each server's pin setting says.

Each tool call gets a decision: reads and writes are allowed, deletes,
destructive calls and calls that require confirmation are confirmed (the
client is asked when it declared elicitation), and the configuration's
decisions rules may allow, confirm or deny others. With -dry-run the
decisions are recorded in the log (decision.verdict, decision.reason,
decision.dryRun) but not enforced: nothing is asked or refused, which shows
what would be before it is switched on.

With -config it reloads the file when it changes and on SIGHUP, without
dropping calls in flight: servers added are connected, servers removed or
changed are stopped (or replaced) once their calls in flight end, servers
unchanged are left running, and the new rules, overrides and trust apply
to the next call. A file that does not load is logged with its error and
the running configuration stays. listen (and -http, -stdio) take effect
only at start. Without -http, listen.http of the file is where it serves.

-pprof serves the Go runtime's profiles (CPU, heap, goroutines) on a
loopback address, for measuring the gateway as it runs; it is off unless
given.

Logs are JSON on standard error, one record per call. Interrupt (Ctrl-C) or
SIGTERM stops it after the calls in flight finish.

Exit status: 0 stopped by an interrupt; 1 the gateway failed (the address
is taken, an upstream setup failed); 2 usage error (also -http off loopback
without authentication); 3 the configuration file could not be read (it is
missing or unreadable) or is not valid.
`
}

func (c *serveCmd) flags(fs *flag.FlagSet) {
	c.untilStopped = true
	c.addr.value = defaultServeAddr
	fs.Var(&c.addr, "http", "serve streamable HTTP at `ADDR` (host:port; loopback unless you need otherwise); without it, listen.http of the configuration")
	fs.BoolVar(&c.stdio, "stdio", false, "serve one client over standard input and output (with -http, HTTP as well; without it, only the approval page, on a loopback port of its own)")
	fs.StringVar(&c.config, "config", "", "configuration `FILE` (preflight YAML, or the mcpServers JSON of Claude Desktop, Claude Code or Cursor, or VS Code's servers); empty serves the built-in setup")
	fs.StringVar(&c.data, "data", "", "data `DIR` of the built-in setup (default: preflight/serve under the user's cache directory)")
	fs.StringVar(&c.logLevel, "log-level", "info", "least severe log `LEVEL`: debug, info, warn or error")
	fs.BoolVar(&c.reset, "reset", false, "put the built-in setup's example files back as they were at first (the audit log, pins and approvals stay)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "record each call's decision (allow, confirm, deny) in the log without enforcing it: nothing is asked or refused")
	fs.StringVar(&c.pprof, "pprof", "", "serve the runtime's profiles (/debug/pprof/) at `ADDR`, a loopback host:port; off when empty")
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
	redislog.Use(logger) // the Redis client's lines are JSON records too
	if c.pprof != "" {
		stop, err := servePprof(c.pprof, logger)
		if err != nil {
			return err
		}
		defer stop()
	}

	if c.config != "" {
		if c.data != "" {
			return usagef("-data is for the built-in setup; a configuration file names its own servers")
		}
		if c.reset {
			return usagef("-reset is for the built-in setup's example files; a configuration file names its own servers")
		}
		return c.serveConfig(ctx, env, logger)
	}
	if err := checkListen(c.listening(nil), nil); err != nil {
		return err
	}
	dir, err := c.dataDir()
	if err != nil {
		return err
	}
	opts, cleanup, err := builtinSetup(ctx, dir, c.reset)
	if err != nil {
		return err
	}
	defer cleanup()
	opts.Logger = logger
	lst := c.listening(nil)
	g, login, err := c.start(ctx, opts, logger, lst.addr, nil, dir)
	if err != nil {
		return err
	}
	defer g.Close()
	return c.serve(ctx, env, g, logger, served{setup: "built-in setup, data in " + dir, listening: lst,
		pins: "sqlite:" + filepath.Join(dir, pinsFile), login: login, state: dir}, nil)
}

// nopWriteCloser is a WriteCloser whose Close does nothing: serve does
// not close the standard output it was given.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// listening is where serve serves: stdio, HTTP at addr (MCP and the page,
// or only the page when httpMCP is false).
type listening struct {
	stdio   bool
	addr    string
	httpMCP bool
}

// listening says where to serve, from the flags and cfg's listen section
// (nil for the built-in setup): -stdio serves stdio, and HTTP too with
// -http, else only the approval page on a loopback port of its own;
// listen.stdio serves stdio beside HTTP; otherwise HTTP, at -http, else
// listen.http, else the default address.
func (c *serveCmd) listening(cfg *config.Config) listening {
	addr := c.addr.value
	if !c.addr.set && cfg != nil && cfg.Listen.HTTP != "" {
		addr = cfg.Listen.HTTP
	}
	switch {
	case c.stdio && !c.addr.set:
		return listening{stdio: true, addr: "127.0.0.1:0"}
	case c.stdio:
		return listening{stdio: true, addr: addr, httpMCP: true}
	}
	return listening{stdio: cfg != nil && cfg.Listen.Stdio, addr: addr, httpMCP: true}
}

// checkListen refuses, before anything starts or is printed, what the
// gateway would refuse once serving: HTTP off loopback without
// authentication (cfg's auth section; the built-in setup, cfg nil, has
// none).
func checkListen(lst listening, cfg *config.Config) error {
	if cfg != nil && !cfg.Auth.IsZero() {
		return nil
	}
	if _, err := auth.Anonymous(&auth.Options{Addr: lst.addr}); err != nil {
		msg := strings.TrimPrefix(err.Error(), "auth: ")
		if cfg == nil {
			msg += "; the built-in setup has none: serve a configuration file with an auth section (-config FILE)"
		}
		return usagef("%s", msg)
	}
	return nil
}

// start builds and starts the gateway: decisions on (in dry-run with
// -dry-run), and, without a page of its own, out-of-band approval on the
// page: with authentication configured (cfg's auth section), people sign
// in with their gateway credential; on loopback the operator also signs in
// with a one-time link, whose login start returns (nil when there is
// none). Approvals the options do not keep elsewhere are kept in the
// state directory, and so is the key of the links `preflight login`
// mints.
func (c *serveCmd) start(ctx context.Context, opts *gateway.Options, logger *slog.Logger, addr string, cfg *config.Config, state string) (*gateway.Gateway, *page.TokenLogin, error) {
	if opts.Decisions == nil {
		opts.Decisions = &stage.DecideOptions{}
	}
	if c.dryRun {
		opts.Decisions.Mode, opts.Decisions.Servers = stage.DryRun, nil
		logger.Info("decisions are recorded, not enforced (-dry-run)")
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	var login *page.TokenLogin
	if opts.Page == nil {
		var err error
		switch {
		case opts.Auth != nil && !opts.Auth.Anonymous():
			login, err = signInPage(ctx, opts, logger, addr, cfg, state)
		case loopback.Is(addr):
			login, err = approvalsPage(ctx, opts, logger, addr, cfg, state)
		}
		if err != nil {
			_ = opts.Close()
			return nil, nil, err
		}
	}
	g, err := gateway.New(opts)
	if err != nil {
		if cerr := opts.Close(); cerr != nil {
			logger.Warn("closing the stores of the configuration", "error", cerr)
		}
		return nil, nil, err
	}
	g.Start()
	return g, login, nil
}

// served is what serve tells the user about.
type served struct {
	listening
	setup      string
	pins       string           // the built-in setup's pin store, "" for none
	login      *page.TokenLogin // nil: no page sign-in to print
	credential bool             // people sign in to the page with their credential
	state      string           // the state directory
}

// serve serves g as s says until ctx is done, passing each value of
// updates to apply meanwhile. Over stdio it first waits, a bounded time,
// for the upstreams (a desktop client lists the tools at once; the late
// ones are announced with list_changed), and writes the approval page's
// address and login link to the log (standard error), never to the
// protocol's standard output.
func (c *serveCmd) serve(ctx context.Context, env *env, g *gateway.Gateway, logger *slog.Logger, s served, updates <-chan func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 2)
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	httpDone := make(chan error, 1)
	switch {
	case s.httpMCP:
		go func() { httpDone <- g.Serve(ctx, ln) }()
	case g.HasPage():
		go func() { httpDone <- g.ServePage(ctx, ln) }()
	default:
		ln.Close()
		httpDone <- nil
	}
	base := "http://" + ln.Addr().String()
	pageURL := g.PageURL() // approvals.pageUrl, else where the page is served
	if pageURL == "" {
		pageURL = base + gateway.PagePath
	}
	if s.login != nil {
		remove, err := writePageURL(s.state, pageURL)
		if err != nil {
			logger.Warn("preflight login will not find the page", "error", err)
		} else {
			defer remove()
		}
	}
	wctx, wcancel := context.WithTimeout(ctx, serveReadyTimeout)
	_ = g.WaitReady(wctx) // a late upstream shows as such below
	wcancel()
	if s.stdio {
		h := g.Health()
		logger.Info("serving over stdio", "setup", s.setup, "tools", h.Tools, "stores", h.Stores)
		if s.httpMCP {
			logger.Info("serving streamable HTTP", "url", base+gateway.MCPPath)
		}
		if s.login != nil {
			link, err := s.login.NewLink(pageURL)
			if err != nil {
				return err
			}
			logger.Info("calls that need a person wait for approval on the page", "page", pageURL, "login", link)
		}
		go func() { done <- g.ServeStdio(ctx, io.NopCloser(env.stdin), nopWriteCloser{env.stdout}) }()
	} else {
		printServing(env.stdout, base, s.setup, s.pins, g.Health())
		if s.login != nil {
			link, err := s.login.NewLink(pageURL)
			if err != nil {
				return err
			}
			printPage(env.stdout, pageURL, link)
		} else if s.credential {
			fmt.Fprintf(env.stdout, "Calls that need a person wait for approval at %s/ (sign in with your gateway token or access token)\n", pageURL)
		}
		fmt.Fprintf(env.stdout, "Stop with Ctrl-C.\n")
		go func() { done <- <-httpDone }()
	}
	for {
		select {
		case err := <-done:
			logger.Info("stopped")
			cancel()
			if s.stdio {
				<-httpDone
			}
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
			return &exitError{code: exitFailure, err: ctx.Err()}
		}
		return couldNotRun(err) // the file is missing, unreadable or not valid
	}
	if err := selfReferential(first, c.config); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	if err := checkListen(c.listening(first), first); err != nil {
		return err
	}
	opts, err := optionsFromConfig(ctx, c.config, first, logger)
	if err != nil {
		return err
	}
	opts.Logger = logger
	lst := c.listening(first)
	state, err := configStateDir(c.config)
	if err != nil {
		_ = opts.Close()
		return err
	}
	g, login, err := c.start(ctx, opts, logger, lst.addr, first, state)
	if err != nil {
		return err
	}
	defer g.Close()
	credential := opts.Page != nil && opts.Auth != nil && !opts.Auth.Anonymous()

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
	return c.serve(ctx, env, g, logger, served{setup: "configuration " + c.config, listening: lst, login: login, credential: credential, state: state}, updates)
}

// reload applies next, a new version of the configuration (or the error
// that kept it from loading), to g, and returns the configuration now in
// force.
func (c *serveCmd) reload(ctx context.Context, g *gateway.Gateway, logger *slog.Logger, running, next *config.Config, err error) *config.Config {
	if err != nil {
		// Watch logged it with the file, the key and what is allowed.
		return running
	}
	opts, err := optionsFromConfig(ctx, c.config, next, logger)
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
	for key, differs := range map[string]bool{
		"decisions": !reflect.DeepEqual(running.Decisions, next.Decisions), "audit": !reflect.DeepEqual(running.Audit, next.Audit),
		"redaction": !reflect.DeepEqual(running.Redaction, next.Redaction), "pins": !reflect.DeepEqual(running.Pins, next.Pins),
		"approvals": !reflect.DeepEqual(running.Approvals, next.Approvals), "auth": !reflect.DeepEqual(running.Auth, next.Auth),
		"requestState": !reflect.DeepEqual(running.RequestState, next.RequestState), "retry": !reflect.DeepEqual(running.Retry, next.Retry),
		"metrics": !reflect.DeepEqual(running.Metrics, next.Metrics), "tracing": !reflect.DeepEqual(running.Tracing, next.Tracing),
	} {
		if differs {
			logger.Warn(key+" changed: it takes effect at start; restart the gateway to apply it", "file", c.config)
		}
	}
	if err := g.Reload(ctx, opts); err != nil {
		logger.Error("configuration not fully reloaded", "file", c.config, "error", err)
	}
	// The running gateway keeps the stores it opened at start; the ones
	// the new version opened are not used.
	if err := opts.Close(); err != nil {
		logger.Warn("closing the stores the new configuration opened", "error", err)
	}
	return next
}

// dataDir returns the built-in setup's data directory, creating it.
func (c *serveCmd) dataDir() (string, error) {
	dir := c.data
	if dir == "" {
		var err error
		if dir, err = defaultDataDir(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return dir, os.MkdirAll(dir, 0o700) // it holds the login key and the approvals
}

// pinsFile is the built-in setup's pin store, in its data directory.
const pinsFile = "pins.db"

// builtinSetup returns the options of the built-in setup: the two example
// servers, each in this process on a subdirectory of dir (created with a
// few sample files on first use, and again with reset), their tools pinned
// in dir's pins.db (warn mode: the examples are trusted servers).
func builtinSetup(ctx context.Context, dir string, reset bool) (*gateway.Options, func(), error) {
	var roots []*os.Root
	var store *sqlstore.Store
	cleanup := func() {
		for _, r := range roots {
			r.Close()
		}
		if store != nil {
			store.Close()
		}
	}
	open := func(sub string, seed map[string]string) (*os.Root, error) {
		p := filepath.Join(dir, sub)
		if reset {
			if err := os.RemoveAll(p); err != nil {
				return nil, err
			}
		}
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
	if store, err = setup.OpenPinStore(ctx, config.Pins{Store: config.PinStoreSQLite, Path: filepath.Join(dir, pinsFile)}); err != nil {
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
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	auditor, auditStore, err := setup.OpenAudit(actx, builtinAuditStore(dir), nil)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("the built-in setup's audit log: %w", err)
	}
	redactor, err := redact.New(nil)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return &gateway.Options{
		Name: "preflight",
		Upstreams: []gateway.UpstreamSpec{
			{Name: "files", Connect: inProcess(func() *mcp.Server { return filetool.NewServer(files, nil) })},
			{Name: "folders", Connect: inProcess(func() *mcp.Server { return foldertool.NewServer(folders, nil) })},
		},
		Pinner: pin.New(store, &pin.Options{Mode: func(string) pin.Mode { return pin.ModeWarn },
			Store: "sqlite:" + filepath.Join(dir, pinsFile)}),
		Auditor:    auditor,
		AuditStore: auditStore,
		Redactor:   redactor,
		Stores:     []gateway.StoreCheck{setup.SQLCheck("pins", store), setup.SQLCheck("audit", auditStore)},
	}, cleanup, nil
}

// builtinAuditStore is the audit store of the built-in setup on dir.
func builtinAuditStore(dir string) string { return "sqlite:" + filepath.Join(dir, "audit.db") }

// printStderr writes the tail of an upstream's stderr under its line of
// the table tw writes, in its last column.
func printStderr(tw io.Writer, lines []string) {
	for _, l := range lines {
		l = strings.ReplaceAll(text.Sanitize(l), "\t", " ")
		fmt.Fprintf(tw, "  \t\t\t\tstderr: %s\n", l)
	}
}

// printServing tells the user where the gateway is and how to connect,
// and where the pins are when pins names the store.
func printServing(w io.Writer, base, setup, pins string, h gateway.Health) {
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
		line := fmt.Sprintf("  %s\t%s\t%s\t%s", text.Sanitize(u.Name), u.State, era, plural(u.Tools, "tool"))
		if u.LastError != "" && u.State != upstream.StateUp {
			line += "\t" + text.Sanitize(u.LastError)
		}
		fmt.Fprintln(tw, line)
		if u.State != upstream.StateUp {
			printStderr(tw, u.Stderr)
		}
	}
	tw.Flush()
	printStores(w, h.Stores)
	fmt.Fprintf(w, "%s, %s, %s served.\n", plural(h.Tools, "tool"), plural(h.Prompts, "prompt"), plural(h.Resources, "resource"))
	fmt.Fprintf(w, "Point a client at it, for example:\n")
	fmt.Fprintf(w, "  claude mcp add --transport http preflight %s\n", url)
	fmt.Fprintf(w, "  npx @modelcontextprotocol/inspector --cli %s --transport http --method tools/list\n", url)
	if pins != "" {
		fmt.Fprintf(w, "Tool definitions are pinned; review them with: preflight pins -store %s list\n", quoteArg(pins))
	}
}

// printStores writes where the gateway keeps its state, and whether each
// store answered.
func printStores(w io.Writer, stores []gateway.StoreHealth) {
	if len(stores) == 0 {
		return
	}
	fmt.Fprintln(w, "stores:")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	for _, s := range stores {
		answer := "up"
		if !s.Up {
			answer = "DOWN: " + s.Error
			if s.FailsClosed != "" {
				answer += "; failing closed: " + s.FailsClosed
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Keeps, text.Sanitize(s.At), text.Sanitize(answer))
	}
	tw.Flush()
}

// approvalsPage turns on out-of-band approval (requests kept in the state
// directory) and the page at /ui with the loopback sign-in, unless the
// options have them, and returns the login whose link serve prints. The
// person at the terminal signs in as the operator; with authentication
// configured they decide the calls of every principal (clients never get
// the link).
func approvalsPage(ctx context.Context, opts *gateway.Options, logger *slog.Logger, addr string, cfg *config.Config, state string) (*page.TokenLogin, error) {
	if opts.Approvals == nil {
		var admins []string
		if opts.Auth != nil && !opts.Auth.Anonymous() {
			admins = []string{""}
		}
		if err := persistentApprovals(ctx, opts, state, admins, logger); err != nil {
			return nil, err
		}
	}
	p := &gateway.Page{}
	sessions, err := fleetPage(p, opts, addr, cfg)
	if err != nil {
		return nil, err
	}
	login, err := linkLogin(state, cfg, sessions)
	if err != nil {
		return nil, err
	}
	p.Login = login
	opts.Page = p
	return login, nil
}

// fleetPage applies what the configuration says of the page's place in a
// fleet: approvals.pageUrl (the address people and clients' links reach,
// such as the load balancer's, and the host names the page answers) and
// the shared sessions of redis.url, which it returns (nil in process).
func fleetPage(p *gateway.Page, opts *gateway.Options, addr string, cfg *config.Config) (page.Sessions, error) {
	if cfg == nil {
		return nil, nil
	}
	if pageURL := cfg.Approvals.PageURL; pageURL != "" {
		p.URL = strings.TrimRight(pageURL, "/")
		p.Secure = strings.HasPrefix(pageURL, "https:")
		p.Hosts, _ = pageHosts(addr, pageURL)
	}
	sessions, check, closeSessions, err := setup.PageSessions(cfg)
	if err != nil {
		return nil, err
	}
	opts.Stores = append(opts.Stores, check)
	if sessions != nil {
		p.Sessions = sessions
		opts.Closers = append(opts.Closers, closeSessions)
	}
	return sessions, nil
}

// linkLogin is the loopback sign-in by one-time link: the links serve
// prints, and those `preflight login` mints with the state directory's key.
// On a fleet (requestState's keys, and sessions that record used tokens
// where every replica sees them) the printed link is signed with a key
// the replicas derive from requestState's, so it signs in once on any.
func linkLogin(state string, cfg *config.Config, sessions page.Sessions) (*page.TokenLogin, error) {
	key, err := loginKey(state)
	if err != nil {
		return nil, fmt.Errorf("the key of login links: %w", err)
	}
	o := &page.TokenLoginOptions{Key: key}
	if spent, ok := sessions.(page.SpentTokens); ok && cfg != nil {
		if shared := setup.PageLoginKeys(cfg); len(shared) > 0 {
			o.SharedKeys, o.Spent = shared, spent
		}
	}
	return page.NewTokenLogin(o), nil
}

// signInPage turns on out-of-band approval (requests kept in the state
// directory unless the configuration names a store) and the page at /ui, where people sign in
// with the credential they use with the gateway, verified as /mcp
// verifies it: they decide their own principal's calls, and
// approvals.admins anyone's. On loopback the operator (principal "", an
// admin) also signs in with the printed one-time link, which it returns.
// The page answers loopback host names, the listen address's host and
// approvals.pageUrl's.
func signInPage(ctx context.Context, opts *gateway.Options, logger *slog.Logger, addr string, cfg *config.Config, state string) (*page.TokenLogin, error) {
	var admins []string
	var pageURL string
	if cfg != nil {
		admins, pageURL = cfg.Approvals.Admins, cfg.Approvals.PageURL
	}
	loopback := loopback.Is(addr)
	if opts.Approvals == nil {
		a := admins
		if loopback {
			a = append(slices.Clone(admins), "")
		}
		if err := persistentApprovals(ctx, opts, state, a, logger); err != nil {
			return nil, err
		}
	}
	hosts, wildcard := pageHosts(addr, pageURL)
	if wildcard && pageURL == "" {
		logger.Warn("the approval page answers only loopback host names and the listen address: set approvals.pageUrl to the address people open", "listen", addr)
	}
	p := &gateway.Page{Hosts: hosts}
	sessions, err := fleetPage(p, opts, addr, cfg)
	if err != nil {
		return nil, err
	}
	var link *page.TokenLogin
	if loopback {
		if link, err = linkLogin(state, cfg, sessions); err != nil {
			return nil, err
		}
	}
	verifier := opts.Auth
	login := page.NewCredentialLogin(&page.CredentialLoginOptions{
		Link: link, MaxBytes: auth.MaxTokenBytes, Logger: logger,
		Verify: func(ctx context.Context, credential string) (page.Identity, error) {
			p, err := verifier.Verify(ctx, credential)
			if err != nil {
				return page.Identity{}, err
			}
			return page.Identity{Principal: p.Name, Admin: slices.Contains(admins, p.Name)}, nil
		},
	})
	p.Login = login
	opts.Page = p
	return link, nil
}

// pageHosts returns the host names the page answers: loopback ones, addr's
// host and pageURL's. wildcard reports that addr listens on every address.
func pageHosts(addr, pageURL string) (hosts []string, wildcard bool) {
	hosts = []string{"localhost", "127.0.0.1", "::1"}
	add := func(h string) {
		if h != "" && !slices.ContainsFunc(hosts, func(x string) bool { return strings.EqualFold(x, h) }) {
			hosts = append(hosts, h)
		}
	}
	if h, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(h); h == "" || ip != nil && ip.IsUnspecified() {
			wildcard = true
		} else {
			add(h)
		}
	}
	if u, err := url.Parse(pageURL); err == nil && pageURL != "" {
		add(u.Hostname())
	}
	return hosts, wildcard
}

// printPage tells the operator where calls wait for approval and how to
// sign in.
func printPage(w io.Writer, pageURL, link string) {
	fmt.Fprintf(w, "Calls that need a person wait for approval at %s/\n", pageURL)
	fmt.Fprintf(w, "Sign in there with this link (once; keep it to yourself, clients never get it):\n")
	fmt.Fprintf(w, "  %s\n", link)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, strings.TrimSuffix(what, "s"))
}
