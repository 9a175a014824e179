package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/catalog"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/page"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/signin"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// Defaults of [Options].
const (
	DefaultName          = "preflight-gateway"
	DefaultShutdownGrace = 30 * time.Second
	DefaultCloseTimeout  = 15 * time.Second
	DefaultPageSize      = 1000
	DefaultSessionIdle   = 30 * time.Minute
)

// Options configure a [Gateway]. Zero fields mean defaults.
type Options struct {
	// Name and Version identify the gateway to clients (serverInfo) and to
	// upstreams (clientInfo); Name is also the audience of its sealed
	// requestState. Empty Name means DefaultName.
	Name, Version string
	// Instructions are sent to clients in initialize and server/discover.
	Instructions string
	// Upstreams are the servers behind the gateway, in the order their
	// items are listed. Names must be unique.
	Upstreams []UpstreamSpec
	// Logger receives the gateway's log, one record per call included. Nil
	// discards it.
	Logger *slog.Logger
	// Resolver works out what each call of an aggregated tool will do, for
	// tools/resolve and before every tools/call. Nil means
	// stage.UpstreamOrStatic (the upstream's own tools/resolve within
	// its static bounds, else the static annotations).
	Resolver stage.Resolver
	// Ring seals the requestState the gateway gives clients. Nil means a
	// random key for this process (replicas need a shared ring).
	Ring *requeststate.Ring
	// Parking holds legacy upstreams' calls that wait for a 2026-07-28
	// client's answers. Nil means in-process, with package forward's
	// defaults.
	Parking forward.Parking
	// MaxRounds bounds the questions of one call. Zero means
	// forward.DefaultMaxRounds.
	MaxRounds int
	// ShutdownGrace bounds how long Serve waits for calls in flight when
	// it stops. Zero means DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// CloseTimeout bounds Close: an upstream, a client's session or a
	// store that has not stopped by then is abandoned, and logged. Zero
	// means DefaultCloseTimeout.
	CloseTimeout time.Duration
	// PageSize is the number of items per page of the lists the gateway
	// serves. Zero means DefaultPageSize.
	PageSize int
	// SessionIdle closes a legacy (2025-11-25) client's session after it
	// has sent nothing for this long. Zero means DefaultSessionIdle.
	SessionIdle time.Duration
	// MaxSessions caps the legacy sessions open at once; past it a client
	// that opens one is told to retry later. Zero means
	// endpoint.DefaultMaxSessions (1000); negative means no cap.
	MaxSessions int
	// MaxSessionsPerPrincipal caps one principal's legacy sessions (all
	// clients of an anonymous gateway are one), so that one client cannot
	// take them all. Zero means endpoint.DefaultMaxSessionsPerUser (64);
	// negative means no cap.
	MaxSessionsPerPrincipal int
	// Disclosure turns on progressive disclosure of tool descriptions for
	// some or all upstreams. Nil means off.
	Disclosure *Disclosure

	// Auth authenticates the clients of the HTTP endpoint and names the
	// principal of every call (package auth). Nil means anonymous, served
	// on a loopback address only.
	Auth *auth.Authenticator
	// Approvals hold the calls whose decision is confirm and that nobody
	// confirmed in-band, until a person approves them on the page (the
	// approve stage). Nil means no out-of-band approval.
	Approvals *approval.Service
	// Page serves the gateway's web page at PagePath. Nil means none.
	Page *Page
	// AuditLog and Pins are what the page shows of the audit log and of
	// the pinned tool definitions. Nil means none.
	AuditLog page.AuditLog
	Pins     page.Pins

	// Pinner pins the tool definitions each upstream lists (the upstream's
	// own names) and holds back those that changed: a quarantined tool is
	// listed as its pinned definition and its calls are refused (the pin
	// stage) until someone approves the change. Nil means no pinning.
	Pinner *pin.Pinner

	// Auditor records every tools/call in the audit log (package audit):
	// calls that must be audited durably before they are forwarded, and
	// refused calls too. Nil means no audit log. [Gateway.Close] closes
	// it (writing what it buffers), then AuditStore.
	Auditor *audit.Auditor
	// AuditStore is the store Auditor writes to, if the gateway is to
	// close it; it is also what reads the log back (a page.AuditLog).
	AuditStore audit.Store
	// AuditSensitiveArgs name arguments whose values the audit log never
	// records (those whose names look like credentials never are either).
	AuditSensitiveArgs []string
	// Redactor redacts tools/call results by their sensitivity (package
	// redact) before they reach the client, on every path. Nil means
	// results pass as the upstream sent them.
	Redactor *redact.Redactor

	// Decisions turns on a decision per tools/call (allow, confirm or
	// deny, from the call's effective hints and the deployer's decision
	// rules) and in-band confirmation: the decide, ask and confirmed
	// stages of package stage. Nil means off: every call is forwarded.
	Decisions *stage.DecideOptions
	// Flow turns on flow control with Decisions: a tools/call whose
	// arguments carry a value the client was shown by another call, from
	// another upstream, gets Decisions.Flow (confirm or deny). Nil means
	// off.
	Flow *FlowOptions
	// ConfirmTTL is how long a 2026-07-28 client has to answer a
	// confirmation, and ConfirmWait how long a legacy client's answer is
	// awaited within its call. Zero means stage.DefaultConfirmTTL and
	// stage.DefaultConfirmWait.
	ConfirmTTL, ConfirmWait time.Duration
	// State holds the short-lived state replicas share: the single-use
	// nonces of confirmations. Nil means state.NewMemory (one process),
	// which Close closes; a State given here is the caller's to close.
	State *state.Store

	// Retry bounds the retries of calls after a transient upstream failure
	// (only calls that are idempotent by their resolution, or that never
	// reached the upstream; see package forward). Nil means the defaults of
	// forward.RetryPolicy; Attempts 1 turns retries off.
	Retry *forward.RetryPolicy
	// Metrics configures the Prometheus metrics served at MetricsPath. Nil
	// means on, with package metrics' defaults.
	Metrics *MetricsOptions

	// TracerProvider traces every call: a span per call, per stage it
	// crosses and per round trip to its upstream (docs/tracing.md). Nil
	// means no traces, at no cost. The gateway does not shut it down:
	// whoever made it does (a Closer).
	TracerProvider trace.TracerProvider

	// Vault keeps the grants of the upstreams with OAuth (a *vault.Vault).
	// Required when one has.
	Vault signin.Store

	// Stores name the stores the options hold besides State, for the
	// health report, which pings them. Nil names none.
	Stores []StoreCheck

	// Closers are called by [Gateway.Close] after the upstreams stopped,
	// or by [Options.Close]: what the maker of the options opened for them
	// (stores, clients).
	Closers []func() error
}

// ListingObserver is a Resolver that wants each upstream's listing as the
// catalog is built from it (package setup's rules, checked against the
// tools as soon as they are listed).
type ListingObserver interface {
	Listed(upstream string, l *catalog.Listing, info *mcp.Implementation)
}

// Close closes what the options hold (the audit log, the pin,
// approval and disclosure stores, Redis clients) for options that no
// gateway took over: a mapping that failed half-way, a gateway that could
// not be built, a reload whose running gateway keeps its own stores. A
// Gateway built from the options closes them itself in [Gateway.Close].
// Closing twice is harmless.
func (o *Options) Close() error {
	var errs []error
	if o.Auditor != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		errs = append(errs, o.Auditor.Close(ctx))
		cancel()
		o.Auditor = nil
	}
	if o.AuditStore != nil {
		errs = append(errs, o.AuditStore.Close())
		o.AuditStore = nil
	}
	if d := o.Disclosure; d != nil && d.Close != nil {
		errs = append(errs, d.Close())
		d.Close = nil
	}
	for _, c := range o.Closers {
		errs = append(errs, c())
	}
	o.Closers = nil
	return errors.Join(errs...)
}

// closeTimeout bounds writing what the audit log buffers when options
// are closed.
const closeTimeout = 30 * time.Second

// FlowOptions configure flow control (package flow). Each zero field
// means flow's default.
type FlowOptions struct {
	// Sensitivity is the result sensitivity from which every candidate
	// value of a result is remembered; below it, only the secrets found.
	Sensitivity hints.Sensitivity
	// TTL is how long a value is remembered; Max bounds the values
	// remembered per principal (and legacy session).
	TTL time.Duration
	Max int
	// Secret keys the fingerprints; replicas need the same. Nil means a
	// random one for this process.
	Secret []byte
	// Servers are the upstreams' modes (stage.FlowOff: a trusted
	// destination; stage.FlowStrict: writing back is flagged too).
	Servers map[string]stage.FlowMode
}

// MetricsOptions configure the gateway's Prometheus metrics.
type MetricsOptions struct {
	// Off turns the metrics and MetricsPath off.
	Off bool
	// Buckets are the latency histogram's upper bounds in seconds; nil
	// means metrics.DefaultBuckets().
	Buckets []float64
}

// UpstreamSpec describes one upstream server and how its names are exposed.
type UpstreamSpec struct {
	// Name identifies the upstream; it is the default prefix of its names.
	Name string
	// Transport is "stdio", "http" or "sse"; empty means stdio with a
	// Command, streamable HTTP with a URL.
	Transport string
	// Command, Args, Env, Dir: a server started over stdio.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL, Headers, BearerTokenEnv: a server over HTTP.
	URL            string
	Headers        map[string]string
	BearerTokenEnv string
	// OAuth, for an HTTP or SSE server, signs the gateway in to it with
	// OAuth 2.1 for each principal (or once, shared); the grants are kept
	// in Options.Vault, and people connect it on the page.
	OAuth *UpstreamOAuth
	// Connect, if set, supplies the transport (an in-process server, a
	// custom transport) instead of the fields above.
	Connect func(ctx context.Context) (mcp.Transport, error)
	// Era pins the protocol era ("2026-07-28" or "2025-11-25"); empty
	// probes server/discover and falls back to initialize.
	Era string
	// Lazy connects on first use instead of at start.
	Lazy bool
	// Prefix and Separator form the exposed names (prefix + separator +
	// name) when the gateway has more than one upstream; empty means the
	// upstream's Name and "__".
	Prefix, Separator string
	// Include and Exclude filter the upstream's tools and prompts by name
	// (path.Match patterns); Exclude wins.
	Include, Exclude []string
	// Timeouts and restart back-off; zero means package upstream's
	// defaults.
	ConnectTimeout, ProbeTimeout, CallTimeout, StopGrace time.Duration
	Restart                                              upstream.Restart
}

func (u UpstreamSpec) spec() upstream.Spec {
	return upstream.Spec{
		Name: u.Name, Transport: u.Transport,
		Command: u.Command, Args: u.Args, Env: u.Env, Dir: u.Dir,
		URL: u.URL, Headers: u.Headers, BearerTokenEnv: u.BearerTokenEnv,
		Connect: u.Connect, Era: u.Era, Lazy: u.Lazy,
		ConnectTimeout: u.ConnectTimeout, ProbeTimeout: u.ProbeTimeout, CallTimeout: u.CallTimeout,
		StopGrace: u.StopGrace, Restart: u.Restart,
	}
}

// UpstreamOAuth is how the gateway signs in to an upstream (package
// signin): everything else is discovered from the upstream.
type UpstreamOAuth struct {
	// Shared makes one connection, made by an admin, serve everybody.
	Shared bool
	// ClientID and ClientSecret are a client registered beforehand with
	// the authorization server Issuer ("" when the gateway registers).
	ClientID, ClientSecret, Issuer string
	// Scopes are asked for besides those the upstream asks for.
	Scopes []string
	// ClientMetadataURL is the client ID metadata document to name the
	// gateway by; "" means the page's own when it is served over https.
	ClientMetadataURL string
}

func (u UpstreamSpec) naming() catalog.Naming {
	return catalog.Naming{Prefix: u.Prefix, Separator: u.Separator, Include: u.Include, Exclude: u.Exclude}
}

// Disclosure turns on progressive disclosure of tool descriptions (seed
// 004, package disclose) for some or all upstreams: their tools are listed
// minimally, their full definitions (with the gateway's exposed names) are
// the tool_descriptions resource, and a call of one of them is refused
// with TOOL_DESCRIPTION_REQUIRED until the caller's scope (legacy session,
// or 2026-07-28 principal) has read its description.
type Disclosure struct {
	// Servers names the upstreams whose tools are disclosed; nil means
	// every upstream.
	Servers []string
	// Options configure package disclose: the store (memory by default;
	// gateway/redisstore for replicas), the TTL, the resource's URI, the
	// schema level of the minimal listing, the rate of reads.
	Options disclose.Options
	// Close, if set, is called by [Gateway.Close]: it releases what the
	// options hold, such as the Redis client of a store that
	// package setup opened.
	Close func() error
}

// PagePath is where [Gateway.Serve] mounts the page (package page).
const PagePath = "/ui"

// Page configures the gateway's web page: pending approvals, the audit
// log, each tool's safety and the pinned definitions.
type Page struct {
	// Login signs people in: a page.TokenLogin on a loopback deployment
	// (the gateway's command prints its login link), an identity
	// provider's page.Authenticator otherwise. Required.
	Login page.Authenticator
	// URL is the page's root as people reach it, such as
	// https://mcp.example.com/ui: the links clients are given start with
	// it. Empty means http://ADDR/ui, ADDR being the listener of Serve.
	URL string
	// Hosts are the host names (without port) the page answers
	// (page.Options.Hosts: nil means loopback names only, so a page served
	// elsewhere lists loopback names too if it wants them); Secure marks
	// its cookies Secure behind a proxy that terminates TLS.
	Hosts  []string
	Secure bool
	// Sessions keeps the page's sessions. Nil means in process.
	Sessions page.Sessions
}
