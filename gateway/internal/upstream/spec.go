package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transports of an upstream.
const (
	TransportStdio = "stdio" // a command started by the gateway
	TransportHTTP  = "http"  // streamable HTTP
	TransportSSE   = "sse"   // the older HTTP+SSE transport (2024-11-05)
)

// Protocol eras an upstream can be pinned to.
const (
	EraAuto   = ""           // probe server/discover, fall back to initialize
	EraModern = "2026-07-28" // server/discover only
	EraLegacy = "2025-11-25" // initialize only
)

// Defaults of a [Spec].
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultProbeTimeout    = 10 * time.Second
	DefaultCallTimeout     = 5 * time.Minute
	DefaultStopGrace       = 5 * time.Second
	DefaultRestartInitial  = 500 * time.Millisecond
	DefaultRestartMax      = 30 * time.Second
	DefaultRestartBudget   = 10
	DefaultRestartWindow   = 10 * time.Minute
	DefaultMaxListPages    = 100
	DefaultMaxListItems    = 10000
	DefaultMaxInflight     = 256
	DefaultMaxStderrLine   = 4096
	defaultKeepAliveLegacy = 30 * time.Second
)

// SignIn authorizes the requests to upstreams that require OAuth, each
// with the grant of the principal it is made for (package signin).
type SignIn interface {
	// Principal returns whose grant a request in ctx to the upstream of
	// that name carries: the principal the call is made for ("" for a
	// shared grant), and false for the gateway's own requests.
	Principal(ctx context.Context, upstream string) (string, bool)
	// Identity returns whose grant the gateway's own requests carry (who
	// connected the upstream first, or the shared grant), false when
	// nobody has.
	Identity(ctx context.Context, upstream string) (string, bool)
	// Authorization returns the Authorization header value of a request
	// carrying principal's grant.
	Authorization(ctx context.Context, upstream, principal string) (string, error)
	// Connected reports whether a request in ctx has a usable grant.
	Connected(ctx context.Context, upstream string) error
	// Refused is told of the upstream's 401 or 403 answer to a request
	// carrying principal's grant.
	Refused(ctx context.Context, upstream, principal string, resp *http.Response)
	// Ready returns a channel closed when somebody next connects the
	// upstream.
	Ready(upstream string) <-chan struct{}
}

// Spec describes one upstream server. Fields left zero take the defaults
// above.
type Spec struct {
	// Name identifies the upstream in logs, health and, by default, as the
	// prefix of its tool and prompt names. Required.
	Name string

	// Transport is TransportStdio, TransportHTTP or TransportSSE. Empty
	// means stdio when Command is set, streamable HTTP when URL is set.
	Transport string

	// Command, Args, Env and Dir start a stdio server. Env is added to the
	// gateway's own environment; Dir is the working directory (empty: the
	// gateway's).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string

	// URL is the endpoint of an HTTP or SSE server; Headers are sent with
	// every request.
	URL     string
	Headers map[string]string
	// BearerTokenEnv names an environment variable whose value is sent as
	// "Authorization: Bearer <value>". It is read when connecting, so a
	// rotated token is picked up on reconnection.
	BearerTokenEnv string
	// SignIn, if set, authorizes each request of an HTTP or SSE upstream
	// that requires OAuth with the token of the principal it is made for
	// (package signin); it wins over an Authorization in Headers.
	SignIn SignIn
	// ToolsOnly serves the upstream's tools only, not its prompts and
	// resources: those of an upstream each principal signs in to are the
	// account's own, and a listing made with one principal's grant must
	// not be shown to another.
	ToolsOnly bool

	// Connect, if set, supplies the transport instead of the fields above:
	// an in-process server (mcp.NewInMemoryTransports) or any custom
	// transport. It is called once per connection attempt.
	Connect func(ctx context.Context) (mcp.Transport, error)

	// Era pins the protocol era: EraAuto (probe server/discover, fall back
	// to initialize on any error or timeout), EraModern or EraLegacy.
	Era string

	// Lazy delays connecting until the gateway first needs the upstream.
	Lazy bool

	// ConnectTimeout bounds one connection attempt, ProbeTimeout the
	// server/discover probe within it; CallTimeout bounds one call
	// (including the time a question waits for its answer).
	ConnectTimeout, ProbeTimeout, CallTimeout time.Duration
	// StopGrace is how long a stopped stdio server may take to exit after
	// its stdin is closed before it is sent SIGTERM (and then killed).
	StopGrace time.Duration
	// Restart bounds reconnection after the upstream dies.
	Restart Restart
}

// Restart is the back-off of reconnection: the delay starts at Initial and
// doubles up to Max; at most Budget restarts happen within any Window
// (further ones wait). A connection that stays up for Max resets the delay.
type Restart struct {
	Initial, Max time.Duration
	Budget       int
	Window       time.Duration
}

// withDefaults returns s with zero fields set to their defaults.
func (s Spec) withDefaults() Spec {
	if s.Transport == "" {
		switch {
		case s.Command != "":
			s.Transport = TransportStdio
		case s.URL != "":
			s.Transport = TransportHTTP
		}
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&s.ConnectTimeout, DefaultConnectTimeout)
	set(&s.ProbeTimeout, DefaultProbeTimeout)
	set(&s.CallTimeout, DefaultCallTimeout)
	set(&s.StopGrace, DefaultStopGrace)
	set(&s.Restart.Initial, DefaultRestartInitial)
	set(&s.Restart.Max, DefaultRestartMax)
	set(&s.Restart.Window, DefaultRestartWindow)
	if s.Restart.Budget <= 0 {
		s.Restart.Budget = DefaultRestartBudget
	}
	if s.ProbeTimeout > s.ConnectTimeout {
		s.ProbeTimeout = s.ConnectTimeout
	}
	return s
}

// Check reports what is wrong with s, naming the field.
func (s Spec) Check() error {
	if s.Name == "" {
		return errors.New("upstream without a name")
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("upstream %q: %s", s.Name, fmt.Sprintf(format, args...))
	}
	d := s.withDefaults()
	if s.Connect != nil {
		return nil
	}
	switch d.Transport {
	case TransportStdio:
		if s.Command == "" {
			return fail("transport stdio needs a command")
		}
		if s.URL != "" {
			return fail("a command and a url: give one of them")
		}
	case TransportHTTP, TransportSSE:
		if s.URL == "" {
			return fail("transport %s needs a url", d.Transport)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fail("url %q: want an absolute http or https URL", s.URL)
		}
		if s.Command != "" {
			return fail("a command and a url: give one of them")
		}
		if s.SignIn != nil && s.BearerTokenEnv != "" {
			return fail("signs in with OAuth and sends a bearer token from the environment: keep one")
		}
	case "":
		return fail("neither a command (stdio) nor a url (http, sse)")
	default:
		return fail("unknown transport %q: want %s, %s or %s", s.Transport, TransportStdio, TransportHTTP, TransportSSE)
	}
	switch s.Era {
	case EraAuto, EraModern, EraLegacy:
	default:
		return fail("unknown era %q: want %q, %q or empty (probe)", s.Era, EraModern, EraLegacy)
	}
	return nil
}
