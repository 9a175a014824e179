// Package upstream connects a gateway to one upstream MCP server and keeps
// it connected: a command over stdio, a streamable HTTP endpoint, or the
// older HTTP+SSE transport, in either protocol era.
//
// A [Conn] is supervised: [Conn.Run] connects (probing server/discover and
// falling back to initialize on any error or timeout), lists what the
// upstream serves, watches for the connection to end, and reconnects with
// capped exponential back-off within a restart budget. Its listing
// disappears while it is down and comes back when it reconnects; every
// change is reported through [Options.OnChange].
//
// Calls that may ask the client something (tools/call, prompts/get,
// resources/read) run as an [Exchange], which yields either the final
// result or the questions the upstream asked, in either era: the
// input_required results of a 2026-07-28 upstream, or the server-to-client
// requests a 2025-11-25 upstream sends in the middle of the call.
//
// Results are captured as the upstream sent them (see capture.go) so that
// the gateway passes them through byte for byte.
package upstream

//lint:file-ignore SA1019 the gateway passes sampling, roots and logging through faithfully; protocol 2026-07-28 deprecates them (SEP-2577) but clients and servers still use them during the deprecation window.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/quietlog"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// State is where a [Conn] is in its life.
type State string

// States of a Conn.
const (
	StateIdle       State = "idle"       // lazy, not needed yet
	StateConnecting State = "connecting" // connecting or listing
	StateUp         State = "up"
	StateDown       State = "down"   // waiting to reconnect
	StateSignIn     State = "signin" // waiting for somebody to connect it (SignIn)
	StateStopped    State = "stopped"
)

// Options configure a [Conn]. A nil *Options means defaults.
type Options struct {
	// Logger receives the connection's events and the stdio server's
	// stderr. Nil discards them.
	Logger *slog.Logger
	// Naming is how the gateway exposes the upstream's names; it is
	// copied into the listing.
	Naming catalog.Naming
	// ClientInfo is how the gateway introduces itself to the upstream.
	// Nil means {Name: "preflight-gateway"}.
	ClientInfo *mcp.Implementation
	// OnChange is called, from the Conn's own goroutines, whenever its
	// state or listing changes. It must not block.
	OnChange func(*Conn)
	// OnListChanged is called after the upstream said its lists of these
	// kinds changed and they were listed again. It must not block.
	OnListChanged func(c *Conn, kinds ListKinds)
	// OnResourceUpdated is called when the upstream reports a subscribed
	// resource as updated. It must not block for long.
	OnResourceUpdated func(ctx context.Context, c *Conn, p *mcp.ResourceUpdatedNotificationParams)
	// MaxInflight bounds the calls running at once on this upstream;
	// further calls fail at once. Zero means DefaultMaxInflight.
	MaxInflight int
}

// Conn is one supervised upstream connection. Create it with [New], run it
// with [Conn.Run].
type Conn struct {
	spec   Spec
	logger *slog.Logger
	opts   Options
	client *mcp.Client

	// testHookResultSent, set by tests before the Conn runs, is called
	// right after a legacy call's result is handed to its exchange.
	testHookResultSent func()

	pool         sync.Once
	roundTripper *http.Transport
	rawClient    *http.Client // for Post: the upstream's headers, no capture (under mu)

	want    chan struct{} // closed when a lazy Conn is first needed
	wantOne sync.Once
	refresh chan struct{} // a list changed: re-list (buffered, 1)
	kinds   atomic.Uint32 // ListKinds announced since the last re-listing

	mu       sync.Mutex
	state    State
	cs       *mcp.ClientSession
	era      string
	listing  *catalog.Listing
	caps     *mcp.ServerCapabilities
	lastErr  string
	stderr   stderrTail // of a stdio server
	since    time.Time
	restarts []time.Time // within the restart window
	upCount  int         // successful connections so far

	wake     chan struct{} // closed and replaced at every change (Recover)
	calls    callTable
	identity *string              // whose grant the current connection carries (SignIn), under mu
	users    userSessions         // a legacy upstream's sessions of other principals (SignIn)
	inflight chan struct{}        // semaphore of running calls
	flow     atomic.Pointer[flow] // of the current connection attempt
}

// New returns a Conn for spec. It does not connect: call [Conn.Run].
func New(spec Spec, opts *Options) (*Conn, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.Naming.Check(); err != nil {
		return nil, fmt.Errorf("upstream %q: %w", spec.Name, err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("upstream", spec.Name)
	if o.MaxInflight <= 0 {
		o.MaxInflight = DefaultMaxInflight
	}
	c := &Conn{
		spec:     spec.withDefaults(),
		logger:   logger,
		opts:     o,
		want:     make(chan struct{}),
		refresh:  make(chan struct{}, 1),
		state:    StateIdle,
		since:    time.Now(),
		inflight: make(chan struct{}, o.MaxInflight),
		wake:     make(chan struct{}),
	}
	c.calls.init()
	if !spec.Lazy {
		c.Want()
	}
	c.client = c.newClient()
	return c, nil
}

// Name is the upstream's configured name.
func (c *Conn) Name() string { return c.spec.Name }

// Spec returns the upstream's specification, with defaults applied.
func (c *Conn) Spec() Spec { return c.spec }

// Want asks a lazy Conn to connect; it is a no-op after the first call.
func (c *Conn) Want() { c.wantOne.Do(func() { close(c.want) }) }

// Health is a snapshot of a Conn for health reports.
type Health struct {
	Name      string    `json:"name"`
	State     State     `json:"state"`
	Transport string    `json:"transport"`
	Era       string    `json:"era,omitempty"`
	Since     time.Time `json:"since"`
	Tools     int       `json:"tools"`
	Prompts   int       `json:"prompts"`
	Resources int       `json:"resources"`
	Restarts  int       `json:"restarts"`
	LastError string    `json:"lastError,omitempty"`
	// Stderr is the last lines a stdio server wrote to stderr, over its
	// restarts (at most 3 lines, 300 bytes, control characters removed),
	// for the operator; it may hold secrets, so the health report leaves
	// it out.
	Stderr []string `json:"-"`
}

// Health reports the Conn's state.
func (c *Conn) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := Health{Name: c.spec.Name, State: c.state, Transport: c.spec.Transport, Era: c.era,
		Since: c.since, Restarts: max(c.upCount-1, 0), LastError: c.lastErr, Stderr: c.stderr.get()}
	if c.spec.Connect != nil {
		h.Transport = "custom"
	}
	if c.listing != nil {
		h.Tools, h.Prompts, h.Resources = len(c.listing.Tools), len(c.listing.Prompts), len(c.listing.Resources)+len(c.listing.Templates)
	}
	return h
}

// Listing returns what the upstream lists, nil while it is not up. The
// listing must not be modified.
func (c *Conn) Listing() *catalog.Listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listing
}

// Capabilities returns the upstream's capabilities, nil while it is down.
func (c *Conn) Capabilities() *mcp.ServerCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// Era returns the protocol version negotiated with the upstream, "" while
// it is down.
func (c *Conn) Era() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era
}

// ErrDown is returned for calls to an upstream that is not connected.
var ErrDown = errors.New("upstream is not connected")

// session returns the current session and its era.
func (c *Conn) session() (*mcp.ClientSession, string, error) {
	c.Want()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == nil {
		return nil, "", fmt.Errorf("%w (%s)", ErrDown, c.state)
	}
	return c.cs, c.era, nil
}

func (c *Conn) setState(s State, err error) {
	c.mu.Lock()
	if c.state != s {
		c.since = time.Now()
	}
	c.state = s
	if err != nil {
		c.lastErr = text.Sanitize(err.Error())
	}
	c.mu.Unlock()
	c.changed()
}

func (c *Conn) changed() {
	c.mu.Lock()
	close(c.wake)
	c.wake = make(chan struct{})
	c.mu.Unlock()
	if f := c.opts.OnChange; f != nil {
		f(c)
	}
}

// Run keeps the upstream connected until ctx is done, then closes the
// connection (a stdio server gets its stdin closed, StopGrace to exit, then
// SIGTERM) and returns.
func (c *Conn) Run(ctx context.Context) {
	defer c.setState(StateStopped, nil)
	defer c.closeIdle()
	select {
	case <-c.want:
	case <-ctx.Done():
		return
	}
	delay := c.spec.Restart.Initial
	for {
		if !c.signedIn(ctx) {
			return
		}
		c.setState(StateConnecting, nil)
		cs, err := c.connect(ctx)
		if err == nil {
			err = c.relist(ctx, cs)
			if err != nil {
				cs.Close()
			}
		}
		if ctx.Err() != nil {
			if cs != nil && err == nil {
				c.drop(cs)
			}
			return
		}
		if err != nil {
			c.logger.Warn("upstream connection failed", "error", text.Sanitize(err.Error()))
			c.setState(StateDown, err)
		} else {
			up := time.Now()
			c.logger.Info("upstream connected", "era", c.Era())
			c.serve(ctx, cs)
			if ctx.Err() != nil {
				return
			}
			c.logger.Warn("upstream connection ended; reconnecting")
			c.setState(StateDown, errors.New("connection ended"))
			if time.Since(up) >= c.spec.Restart.Max {
				delay = c.spec.Restart.Initial
			}
		}
		if !c.sleep(ctx, c.nextDelay(&delay)) {
			return
		}
	}
}

// signInRecheck is how often an upstream waiting for somebody to connect
// it looks for a connection made on another replica sharing the vault.
const signInRecheck = 5 * time.Second

// signedIn waits, for an upstream that signs in, until the gateway's own
// requests have a grant to carry (somebody connected it, here or on a
// replica), without spending the restart budget. It returns false when
// ctx is done.
func (c *Conn) signedIn(ctx context.Context) bool {
	s := c.spec.SignIn
	if s == nil {
		return true
	}
	for waited := false; ; waited = true {
		ready := s.Ready(c.spec.Name)
		err := s.Connected(ctx, c.spec.Name)
		if err == nil {
			return true
		}
		if !waited {
			c.logger.Info("upstream waits for somebody to connect it", "reason", text.Sanitize(err.Error()))
		}
		c.setState(StateSignIn, err)
		t := time.NewTimer(signInRecheck)
		select {
		case <-ready:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// closeIdle closes the connections of the upstream's HTTP pool that carry
// no request, so that a stopped gateway leaves none open behind it.
func (c *Conn) closeIdle() {
	c.mu.Lock()
	t := c.roundTripper
	c.mu.Unlock()
	if t != nil {
		t.CloseIdleConnections()
	}
}

// nextDelay returns how long to wait before the next attempt: the back-off
// delay (doubled for the time after), or longer if the restart budget of
// the window is spent.
func (c *Conn) nextDelay(delay *time.Duration) time.Duration {
	d := *delay
	*delay = min(2*d, c.spec.Restart.Max)
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.restarts[:0]
	for _, t := range c.restarts {
		if now.Sub(t) < c.spec.Restart.Window {
			kept = append(kept, t)
		}
	}
	c.restarts = kept
	if len(c.restarts) >= c.spec.Restart.Budget {
		wait := c.spec.Restart.Window - now.Sub(c.restarts[0])
		if wait > d {
			c.logger.Warn("upstream restart budget spent; waiting", "budget", c.spec.Restart.Budget, "window", c.spec.Restart.Window, "wait", wait.Round(time.Second))
			d = wait
		}
	}
	c.restarts = append(c.restarts, now.Add(d))
	return d
}

func (c *Conn) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// serve waits for the session to end, re-listing when the upstream says a
// list changed, until ctx is done (then it closes the session).
func (c *Conn) serve(ctx context.Context, cs *mcp.ClientSession) {
	ended := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(ended)
	}()
	for {
		select {
		case <-ended:
			c.drop(cs)
			return
		case <-ctx.Done():
			c.drop(cs)
			<-ended
			return
		case <-c.refresh:
			kinds := ListKinds(c.kinds.Swap(0))
			if err := c.relist(ctx, cs); err != nil && ctx.Err() == nil {
				c.logger.Warn("upstream re-listing failed", "error", text.Sanitize(err.Error()))
			}
			if f := c.opts.OnListChanged; f != nil && kinds != 0 {
				f(c, kinds)
			}
		}
	}
}

// drop closes cs, and the principals' sessions made beside it, and
// forgets it and its listing.
func (c *Conn) drop(cs *mcp.ClientSession) {
	c.mu.Lock()
	if c.cs == cs {
		c.cs, c.listing, c.caps, c.era = nil, nil, nil, ""
	}
	c.mu.Unlock()
	c.users.closeBeside(cs)
	_ = cs.Close()
	c.changed()
}

// connect makes one connection attempt, bounded by ConnectTimeout, with the
// era probe of the spec: server/discover first, then initialize if the
// probe fails or takes longer than ProbeTimeout.
func (c *Conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, c.spec.ConnectTimeout)
	defer cancel()
	attempt := func(ctx context.Context, version string) (*mcp.ClientSession, error) {
		f := newFlow()
		c.flow.Store(f)
		t, err := c.transport(ctx, f)
		if err != nil {
			return nil, err
		}
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		return c.client.Connect(ctx, t, opts)
	}
	switch c.spec.Era {
	case EraLegacy:
		return attempt(ctx, EraLegacy)
	case EraModern:
		cs, err := attempt(ctx, EraModern)
		if err == nil && cs.InitializeResult().ProtocolVersion < EraModern {
			cs.Close()
			return nil, fmt.Errorf("upstream answered server/discover badly and was connected at %s; its era is pinned to %s", cs.InitializeResult().ProtocolVersion, EraModern)
		}
		return cs, err
	}
	probe, cancelProbe := context.WithTimeout(ctx, c.spec.ProbeTimeout)
	cs, err := attempt(probe, "")
	probeTimedOut := probe.Err() != nil
	cancelProbe()
	if err == nil {
		return cs, nil
	}
	if probeTimedOut && ctx.Err() == nil {
		c.logger.Info("upstream did not answer server/discover in time; falling back to initialize", "probeTimeout", c.spec.ProbeTimeout)
		return attempt(ctx, EraLegacy)
	}
	return nil, err
}

// relist lists everything the upstream serves and publishes it.
func (c *Conn) relist(ctx context.Context, cs *mcp.ClientSession) error {
	ctx, cancel := context.WithTimeout(ctx, c.spec.ConnectTimeout)
	defer cancel()
	res := cs.InitializeResult()
	caps := res.Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	modern := res.ProtocolVersion >= EraModern
	l := &catalog.Listing{Upstream: c.spec.Name, Naming: c.opts.Naming}
	var err error
	if caps.Tools != nil {
		if l.Tools, l.ToolsCache, err = listTools(ctx, cs, modern); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
	}
	// What an upstream that each principal signs in to lists of prompts
	// and resources is the listing identity's own (their documents,
	// their texts), not everybody's: only its tools are served.
	if caps.Prompts != nil && !c.spec.ToolsOnly {
		if l.Prompts, l.PromptsCache, err = listPrompts(ctx, cs, modern); err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
	}
	if caps.Resources != nil && !c.spec.ToolsOnly {
		if l.Resources, l.ResourcesCache, err = listResources(ctx, cs, modern); err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if l.Templates, l.TemplatesCache, err = listTemplates(ctx, cs, modern); err != nil {
			// Some servers have resources but no templates method.
			if !isMethodNotFound(err) {
				return fmt.Errorf("resources/templates/list: %w", err)
			}
			l.Templates, l.TemplatesCache = nil, catalog.Cache{}
		}
	}
	for _, t := range l.Tools {
		t.Upstream = c.spec.Name
		if c.spec.Transport == TransportSSE && c.spec.Connect == nil {
			// The SDK's HTTP+SSE server answers a method it does not know
			// (tools/resolve) with HTTP 400, which its client takes for a
			// broken connection: such tools get their static annotations.
			t.Resolvable = false
		}
	}
	for _, p := range l.Prompts {
		p.Upstream = c.spec.Name
	}
	for _, r := range l.Resources {
		r.Upstream = c.spec.Name
	}
	for _, t := range l.Templates {
		t.Upstream = c.spec.Name
	}
	if caps.Logging != nil && !modern {
		// Ask a legacy upstream for everything; each client's own level
		// filters what it gets.
		_ = cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	}
	c.mu.Lock()
	first := c.cs != cs
	c.cs, c.listing, c.caps, c.era = cs, l, caps, res.ProtocolVersion
	if first {
		c.upCount++
	}
	c.mu.Unlock()
	c.setState(StateUp, nil)
	return nil
}

func isMethodNotFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == jsonrpc.CodeMethodNotFound
}

// ClientInfo is how the gateway introduces itself to the upstream: in its
// initialize request, and in the _meta of its 2026-07-28 requests.
func (c *Conn) ClientInfo() *mcp.Implementation {
	if c.opts.ClientInfo == nil {
		return &mcp.Implementation{Name: "preflight-gateway"}
	}
	return c.opts.ClientInfo
}

// newClient builds the SDK client the Conn connects with: automatic MRTR
// off (the gateway passes input_required on), every kind of question
// declared (they are routed to the client of the call that asked), the
// tool-resolution extension declared (to see which tools are resolvable,
// with the policy hints and security schemes of their resolutions),
// and handlers for the upstream's notifications.
func (c *Conn) newClient() *mcp.Client {
	info := c.ClientInfo()
	caps := &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
		Sampling:    &mcp.SamplingCapabilities{},
	}
	caps.AddExtension(preflight.ExtensionToolResolution, nil)
	// An extension-shape answer carries the policy hints and security
	// schemes only to a request that declared them: without them a
	// resolution would lose its effect (a delete would read as a write).
	caps.AddExtension(preflight.MetaPolicyHints, nil)
	caps.AddExtension(preflight.MetaSecuritySchemes, nil)
	client := mcp.NewClient(info, &mcp.ClientOptions{
		Logger:         quietlog.Warn(c.logger),
		Capabilities:   caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		KeepAlive:      defaultKeepAliveLegacy,
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("unreachable: questions are routed by middleware")
		},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.relistSoon(ListTools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.relistSoon(ListPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.relistSoon(ListResources) },
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if f := c.opts.OnResourceUpdated; f != nil && req.Params != nil {
				f(ctx, c, req.Params)
			}
		},
		LoggingMessageHandler:       c.onLog,
		ProgressNotificationHandler: c.onProgress,
	})
	client.AddSendingMiddleware(noCache)
	registerResolve(client)
	client.AddReceivingMiddleware(c.questionRouter, c.countHandled)
	return client
}

// ListKinds is a set of lists: ListTools, ListPrompts, ListResources.
type ListKinds uint32

// Kinds of lists.
const (
	ListTools ListKinds = 1 << iota
	ListPrompts
	ListResources
)

// relistSoon asks the supervisor to re-list (the notification handler runs
// on the connection's reader and must not call the upstream itself).
func (c *Conn) relistSoon(k ListKinds) {
	for {
		old := c.kinds.Load()
		if c.kinds.CompareAndSwap(old, old|uint32(k)) {
			break
		}
	}
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}
