package config

import (
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/hints"
)

// Defaults applied by [Parse] to what a file leaves out.
const (
	DefaultSeparator       = "__"
	DefaultConnectTimeout  = 60 * time.Second
	DefaultDiscoverTimeout = 5 * time.Second
	DefaultCallTimeout     = 5 * time.Minute
	DefaultShutdownTimeout = 5 * time.Second
	DefaultDisclosureTTL   = disclose.DefaultTTL
	DefaultRedisPrefix     = "preflight:"
	DefaultPrincipalClaim  = "sub"
	DefaultClockSkew       = 30 * time.Second
	DefaultJWKSRefresh     = time.Hour
	DefaultJWKSMinInterval = 30 * time.Second
)

// Limits on the auth section.
const (
	MaxTokens       = 1000            // static tokens
	MaxClockSkew    = 5 * time.Minute // oauth.clockSkew
	MaxPrincipalLen = 128             // a static token's principal, in characters
)

// Config is a gateway's configuration, validated and with every default
// applied. It is plain data: the gateway maps it onto its own options.
// Its JSON encoding is the canonical format in JSON syntax, and [Marshal]
// writes it as YAML.
type Config struct {
	// Schema is the JSON Schema a file names for editors ("$schema");
	// it is kept but not used.
	Schema string `json:"$schema,omitempty"`
	// Listen says where the gateway serves MCP.
	Listen Listen `json:"listen,omitzero"`
	// Servers are the upstream servers by name, at least one.
	Servers map[string]*Server `json:"servers"`
	// Disclosure is progressive disclosure for the whole gateway.
	Disclosure Disclosure `json:"disclosure"`
	// Redis is the shared Redis; zero when the file names none.
	Redis Redis `json:"redis,omitzero"`
	// Auth is how clients authenticate; zero means they do not, which is
	// allowed only on a loopback listener.
	Auth Auth `json:"auth,omitzero"`
	// RequestState names the keys that seal the requestState of
	// 2026-07-28 clients; zero means a random key per process.
	RequestState RequestState `json:"requestState,omitzero"`
	// Approvals keeps the calls that wait for a person's approval; zero
	// when the file has no approvals section.
	Approvals Approvals `json:"approvals,omitzero"`
	// Pins is where pinned tool definitions are kept.
	Pins Pins `json:"pins"`
	// Vault is where the tokens of servers with auth: oauth are kept.
	Vault Vault `json:"vault"`
	// Audit is the audit log; by default SQLite at DefaultAuditPath.
	Audit Audit `json:"audit"`
	// Redaction is the redaction of results by sensitivity; on by
	// default.
	Redaction Redaction `json:"redaction"`
	// Decisions are the gateway's decisions on tool calls.
	Decisions Decisions `json:"decisions"`
	// Flow is flow control between servers; on (confirm) by default.
	Flow Flow `json:"flow"`
	// Retry bounds retries after transient upstream failures; zero means
	// the gateway's defaults.
	Retry Retry `json:"retry,omitzero"`
	// Metrics configures /metrics; zero means on.
	Metrics Metrics `json:"metrics,omitzero"`
	// Tracing exports OpenTelemetry traces; zero means off.
	Tracing Tracing `json:"tracing,omitzero"`
}

// Listen says where the gateway serves MCP. Its zero value leaves both to
// the command's flags and defaults.
type Listen struct {
	// HTTP is the host:port of the streamable HTTP endpoint (/mcp).
	// Empty means the command's default, a loopback address.
	HTTP string `json:"http,omitempty"`
	// Stdio also serves MCP on standard input and output.
	Stdio bool `json:"stdio,omitempty"`
	// MaxSessions caps the legacy (2025-11-25) sessions open at once, and
	// MaxSessionsPerPrincipal one principal's; 0 means the gateway's
	// defaults (1000 and 64).
	MaxSessions             int `json:"maxSessions,omitempty"`
	MaxSessionsPerPrincipal int `json:"maxSessionsPerPrincipal,omitempty"`
}

// MaxSessionsCap bounds listen.maxSessions and
// listen.maxSessionsPerPrincipal.
const MaxSessionsCap = 100000

// Server is one upstream MCP server.
type Server struct {
	// Type is the transport. When a file leaves it out it is stdio if
	// Command is set and http if URL is.
	Type Transport `json:"type"`

	// Command starts a stdio server, with Args, Env added to the
	// gateway's environment, and Cwd as its working directory.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty" config:"text"`
	Env     map[string]string `json:"env,omitempty" config:"text"`
	// EnvFile is a file of NAME=value lines added to Env (Env wins).
	// [Load] reads it; [Parse] does no I/O and only records the path.
	// Relative paths here and in Cwd are resolved against the config
	// file's directory.
	EnvFile string `json:"envFile,omitempty"`
	Cwd     string `json:"cwd,omitempty"`

	// URL is the endpoint of an http or sse server; Headers are sent
	// with every request.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty" config:"text"`
	// BearerTokenEnv names the environment variable whose value is sent
	// as "Authorization: Bearer <value>".
	BearerTokenEnv string `json:"bearerTokenEnv,omitempty"`
	// BearerToken is the value of BearerTokenEnv, read when the file
	// is parsed. It is never written out.
	BearerToken string `json:"-"`
	// Auth "oauth" signs the gateway in to the server with OAuth 2.1, for
	// each principal or shared (OAuth); the tokens are kept in the vault.
	Auth  ServerAuth  `json:"auth,omitempty"`
	OAuth ServerOAuth `json:"oauth,omitzero"`

	// Prefix and Separator name this server's tools and prompts as
	// Prefix+Separator+name. Prefix defaults to the server's name (with
	// characters a tool name cannot hold replaced by "_") when there is
	// more than one server, and to "" (names unchanged) when there is
	// one; "" means unprefixed.
	Prefix    string `json:"prefix"`
	Separator string `json:"separator"`
	// Include and Exclude filter the upstream's tools by name (before
	// prefixing) with path.Match globs: a tool is served when Include is
	// empty or one of its patterns matches, and none of Exclude's does.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`

	// Connect is when the gateway connects: at start or at first use.
	Connect Connect `json:"connect"`
	// Timeouts bound the connection and each request.
	Timeouts Timeouts `json:"timeouts"`

	// Trust says whether this server's hints may lower caution.
	Trust Trust `json:"trust"`
	// Pack is the rules pack shipped with the gateway that resolves this
	// server's calls after its own tools/resolve: [PackAuto] (written
	// true, the default) the pack its serverInfo name selects when it is
	// trusted, [PackOff] (written false) none, or a pack's name, used
	// whatever the server calls itself.
	Pack Pack `json:"pack"`
	// Pin is what a change to a tool's definition since it was first seen
	// or last approved does: [PinStrict] quarantines the tool,
	// [PinWarn] quarantines it only when the change removes caution and
	// otherwise logs it, [PinOff] does nothing. It defaults to PinStrict
	// for an untrusted server and PinWarn for a trusted one.
	Pin Pin `json:"pin"`
	// Disclose turns progressive disclosure on for this server's tools.
	// It defaults to Disclosure.Enabled.
	Disclose bool `json:"disclose"`
	// Decisions is this server's decision mode, enforce or dry-run. It
	// defaults to decisions.mode.
	Decisions DecisionMode `json:"decisions"`
	// Flow is how calls to this server are checked for values read from
	// others: on (default), off (a trusted destination) or strict
	// (writing a value back to this server is checked too).
	Flow ServerFlow `json:"flow"`
	// Overrides are the deployer's annotations and hints for tools, by
	// the upstream's tool name; they win over the server's.
	Overrides map[string]Override `json:"overrides,omitempty"`
	// Rules map a call to annotations and hints for upstreams that do not
	// resolve calls themselves, in order.
	Rules []Rule `json:"rules,omitempty"`
}

// Allows reports whether the tool named tool (the upstream's name) passes
// s's Include and Exclude filters.
func (s *Server) Allows(tool string) bool {
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool {
			ok, _ := path.Match(p, tool) // patterns are checked at load
			return ok
		})
	}
	return (len(s.Include) == 0 || match(s.Include)) && !match(s.Exclude)
}

// Timeouts bound an upstream's connection and requests.
type Timeouts struct {
	// Connect bounds starting the process or opening the connection and
	// the handshake. Default [DefaultConnectTimeout].
	Connect Duration `json:"connect"`
	// Discover bounds the server/discover probe before the gateway falls
	// back to initialize. Default [DefaultDiscoverTimeout].
	Discover Duration `json:"discover"`
	// Call bounds one request to the upstream, after which it is
	// cancelled. Default [DefaultCallTimeout].
	Call Duration `json:"call"`
	// Shutdown is how long a stopping upstream has to finish before it
	// is killed. Default [DefaultShutdownTimeout].
	Shutdown Duration `json:"shutdown"`
}

// Override is a deployer's annotations and hints for one tool.
type Override struct {
	Annotations Annotations `json:"annotations,omitzero"`
	Hints       Hints       `json:"hints,omitzero"`
}

// Rule maps calls to annotations and hints. It is carried as written: the
// gateway compiles When.
type Rule struct {
	// Name identifies the rule in errors and logs; unique per server.
	Name string `json:"name"`
	// Tool is a path.Match glob over the upstream's tool names.
	// Default "*".
	Tool string `json:"tool"`
	// When is a CEL expression over the call; empty means always.
	When string `json:"when,omitempty"`
	// Annotations and Hints are what a matching call gets; at least one
	// is set.
	Annotations Annotations `json:"annotations,omitzero"`
	Hints       Hints       `json:"hints,omitzero"`
}

// Annotations are the standard tool annotations a deployer sets; nil
// means not set.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// IsZero reports whether no annotation is set.
func (a Annotations) IsZero() bool { return a == Annotations{} }

// Apply returns base with every annotation set in a replacing base's.
func (a Annotations) Apply(base preflight.Annotations) preflight.Annotations {
	for _, f := range []struct {
		over *bool
		into *bool
	}{
		{a.ReadOnlyHint, &base.ReadOnlyHint},
		{a.DestructiveHint, &base.DestructiveHint},
		{a.IdempotentHint, &base.IdempotentHint},
		{a.OpenWorldHint, &base.OpenWorldHint},
	} {
		if f.over != nil {
			*f.into = *f.over
		}
	}
	return base
}

// Hints are the mcp.dev/ policy hints a deployer sets; the zero value of
// each field means not set.
type Hints struct {
	Effect               hints.Effect      `json:"effect,omitempty"`
	Idempotent           *bool             `json:"idempotent,omitempty"`
	RequiresConfirmation *bool             `json:"requiresConfirmation,omitempty"`
	ResultSensitivity    hints.Sensitivity `json:"resultSensitivity,omitempty"`
}

// IsZero reports whether no hint is set.
func (h Hints) IsZero() bool { return h == Hints{} }

// Hints returns h as the hints package's type.
func (h Hints) Hints() hints.Hints {
	return hints.Hints{Effect: h.Effect, Idempotent: h.Idempotent,
		RequiresConfirmation: h.RequiresConfirmation, ResultSensitivity: h.ResultSensitivity}
}

// Disclosure is progressive disclosure for the whole gateway.
type Disclosure struct {
	// Enabled is the default of every server's Disclose.
	Enabled bool `json:"enabled"`
	// Store holds which tools each principal or session has fetched:
	// memory (one process) or redis (shared by replicas; needs Redis).
	Store Store `json:"store"`
	// TTL is how long a fetch authorizes calls after the last one.
	// Default [DefaultDisclosureTTL].
	TTL Duration `json:"ttl"`
}

// Redis is the Redis server that replicas share state in.
type Redis struct {
	// URL is redis://[user:password@]host:port[/db], rediss:// for TLS,
	// or unix:///path.
	URL string `json:"url"`
	// Prefix starts every key the gateway writes; deployments sharing
	// one Redis use different prefixes. Default [DefaultRedisPrefix].
	Prefix string `json:"prefix,omitempty"`
}

// Auth is how the gateway authenticates its clients: static bearer tokens,
// OAuth 2.1 access tokens, or both. Its zero value means no authentication:
// every client is anonymous, which [Parse] allows only when listen.http is
// a loopback address (and the gateway checks its actual listener too).
type Auth struct {
	// Tokens are static bearer tokens, each stored as its SHA-256 with the
	// principal it stands for.
	Tokens []Token `json:"tokens,omitempty"`
	// OAuth makes the gateway an OAuth 2.1 resource server; zero when the
	// file sets none.
	OAuth OAuth `json:"oauth,omitzero"`
}

// IsZero reports whether a sets no authentication.
func (a Auth) IsZero() bool { return len(a.Tokens) == 0 && a.OAuth.IsZero() }

// Token is one static bearer token.
type Token struct {
	// Principal is who presents the token: the name that decisions,
	// approvals and the audit use. Several tokens may share one.
	Principal string `json:"principal"`
	// SHA256 is "sha256:" and the token's SHA-256 in lower-case hex. The
	// token itself is never in the config; only random tokens of high
	// entropy (such as preflight token makes) are safe to store this way.
	SHA256 string `json:"sha256"`
}

// OAuth configures the gateway as an OAuth 2.1 resource server that
// accepts JWT access tokens signed by one issuer.
type OAuth struct {
	// Issuer is the authorization server's issuer identifier; a token's
	// iss must equal it. Its keys are found from its metadata (RFC 8414,
	// then OpenID Connect discovery) unless JWKSURL is set.
	Issuer string `json:"issuer"`
	// Resource is the canonical URL of the gateway's MCP endpoint, as
	// clients reach it (https://mcp.example.com/mcp): the resource of the
	// protected-resource metadata (RFC 9728).
	Resource string `json:"resource"`
	// Audience lists the values a token's aud must contain one of.
	// Default: Resource.
	Audience []string `json:"audience,omitempty"`
	// JWKSURL is where the issuer's signing keys are; empty means the
	// jwks_uri of the issuer's metadata.
	JWKSURL string `json:"jwksUrl,omitempty"`
	// Algorithms are the signature algorithms accepted. Default RS256,
	// ES256, EdDSA. HMAC and "none" are never accepted.
	Algorithms []Algorithm `json:"algorithms,omitempty"`
	// Scopes are required of every token (all of them), and advertised as
	// scopes_supported. Default none.
	Scopes []string `json:"scopes,omitempty"`
	// PrincipalClaim is the claim that names the principal. Default
	// [DefaultPrincipalClaim].
	PrincipalClaim string `json:"principalClaim"`
	// ClockSkew is the tolerance on exp, nbf and iat. Default
	// [DefaultClockSkew], at most [MaxClockSkew].
	ClockSkew Duration `json:"clockSkew"`
	// JWKSRefresh is how old the cached keys may get before they are
	// fetched again. Default [DefaultJWKSRefresh].
	JWKSRefresh Duration `json:"jwksRefresh"`
	// JWKSMinInterval is the least time between two fetches of the keys,
	// however many tokens with unknown key ids arrive. Default
	// [DefaultJWKSMinInterval], at most JWKSRefresh.
	JWKSMinInterval Duration `json:"jwksMinInterval"`
}

// IsZero reports whether o sets nothing.
func (o OAuth) IsZero() bool { return reflect.ValueOf(o).IsZero() }

// Algorithm is a JWS signature algorithm.
type Algorithm string

// The algorithms an OAuth access token may be signed with.
const (
	RS256 Algorithm = "RS256"
	RS384 Algorithm = "RS384"
	RS512 Algorithm = "RS512"
	PS256 Algorithm = "PS256"
	PS384 Algorithm = "PS384"
	PS512 Algorithm = "PS512"
	ES256 Algorithm = "ES256"
	ES384 Algorithm = "ES384"
	ES512 Algorithm = "ES512"
	EdDSA Algorithm = "EdDSA"
)

// algorithms are the Algorithm values, in the order errors list them.
var algorithms = []Algorithm{RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA}

// defaultAlgorithms are accepted when a file names none.
func defaultAlgorithms() []Algorithm { return []Algorithm{RS256, ES256, EdDSA} }

// Transport is how the gateway talks to an upstream.
type Transport string

// The transports.
const (
	TransportStdio Transport = "stdio" // a process started by the gateway
	TransportHTTP  Transport = "http"  // streamable HTTP
	TransportSSE   Transport = "sse"   // the older HTTP+SSE transport
)

// Connect is when the gateway connects to an upstream.
type Connect string

// The connect modes.
const (
	ConnectEager Connect = "eager" // at start, all upstreams in parallel (default)
	ConnectLazy  Connect = "lazy"  // at the first request that needs it
)

// Pack selects a server's shipped rules pack: PackAuto, PackOff or a
// pack's name. It is written true, false or the name.
type Pack string

// Values of Pack besides a pack's name.
const (
	PackAuto Pack = "true"
	PackOff  Pack = "false"
)

// MarshalJSON writes PackAuto and PackOff as booleans, a name as a
// string.
func (p Pack) MarshalJSON() ([]byte, error) {
	switch p {
	case PackAuto, "":
		return []byte("true"), nil
	case PackOff:
		return []byte("false"), nil
	}
	return json.Marshal(string(p))
}

// Trust is how far an upstream's own hints are believed.
type Trust string

// The trust levels.
const (
	// Trusted: the server's hints and resolutions are used as given,
	// within the static bounds (default).
	Trusted Trust = "trusted"
	// Untrusted: the server's hints may only add caution.
	Untrusted Trust = "untrusted"
)

// Pin is how tool definitions are pinned (see package gateway/pin).
type Pin string

// The pinning modes.
const (
	// PinStrict: any change quarantines the tool (default for untrusted
	// servers).
	PinStrict Pin = "strict"
	// PinWarn: a change that removes caution quarantines the tool, one
	// that only adds caution is accepted, any other is logged and the
	// tool stays callable (default for trusted servers).
	PinWarn Pin = "warn"
	// PinOff: definitions are not pinned.
	PinOff Pin = "off"
)

// Store is where shared state lives.
type Store string

// The stores.
const (
	StoreMemory Store = "memory" // this process only (default)
	StoreRedis  Store = "redis"  // the Redis in Config.Redis
)

// Duration is a time.Duration written as text ("30s", "5m").
type Duration time.Duration

// String writes d as time.Duration.String does, without zero minutes and
// seconds at the end ("1m", not "1m0s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText writes d as String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a positive duration with units.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Names returns the servers' names, sorted.
func (c *Config) Names() []string {
	names := make([]string, 0, len(c.Servers))
	for n := range c.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
