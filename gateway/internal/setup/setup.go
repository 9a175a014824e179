// Package setup turns a configuration (package gateway/config) into the
// gateway's Options: it opens the stores the configuration names (SQLite
// or PostgreSQL audit, pins and approvals; Redis state), compiles the
// servers' rules into a Resolver, and maps every other section, naming the
// key of what the gateway cannot do. It is the one place configuration
// meets the runtime packages, which take their own options.
package setup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/approval"
	approvalsql "github.com/preflightmcp/preflight/gateway/internal/approval/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	auditsql "github.com/preflightmcp/preflight/gateway/internal/audit/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/forward"
	"github.com/preflightmcp/preflight/gateway/internal/pin"
	"github.com/preflightmcp/preflight/gateway/internal/pin/sqlstore"
	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/redisstore"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/gateway/internal/state"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/requeststate"
)

// Options maps a configuration read by package config onto the gateway's
// Options: each server becomes an UpstreamSpec (in the order of their
// names), and the servers' trust, overrides and rules a Resolver of
// deployer rules and the shipped rules pack ([RulesResolver]). ctx bounds
// opening the stores it names; logger is the gateway's (nil discards).
//
// The auth section becomes Options.Auth (package auth: static tokens,
// an OAuth resource server). What the configuration sets and the gateway
// cannot do is an error naming the key, never silently dropped: a server
// left unprefixed in front of several. Listen is left to the
// command that serves the gateway. Servers whose disclose is true
// (disclosure.enabled is its default) become Options.Disclosure, with
// disclosure.ttl and, for disclosure.store redis, a gateway/redisstore
// store on redis.url under redis.prefix + "disclose:", whose client
// Gateway.Close closes. requestState's keys become Options.Ring, shared
// by every replica with the same keys; an approvals section becomes
// Options.Approvals (see approvalsFromConfig); redis.url becomes
// Options.State (single-use confirmations and notifications shared by
// replicas, under redis.prefix + "state:"), which Gateway.Close closes. Unless every server's pin
// is off, the pins section becomes Options.Pinner, over the store
// [OpenPinStore] opens (which Gateway.Close closes), with each server's pin
// as its mode.
// The audit section opens its store (SQLite at
// audit.path or [config.DefaultAuditPath], or PostgreSQL) into
// Options.Auditor and Options.AuditStore, which Gateway.Close
// closes; the redaction section becomes Options.Redactor.
// Decisions are on ([DecisionsFromConfig]).
func Options(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*gateway.Options, error) {
	if cfg == nil || len(cfg.Servers) == 0 {
		return nil, errors.New("configuration: servers: at least one server is required")
	}
	var errs []error
	names := cfg.Names()
	opts := &gateway.Options{Logger: logger, MaxSessions: cfg.Listen.MaxSessions, MaxSessionsPerPrincipal: cfg.Listen.MaxSessionsPerPrincipal}
	if !cfg.Auth.IsZero() {
		a, err := auth.New(AuthOptions(cfg.Auth, cfg.Listen.HTTP))
		if err != nil {
			errs = append(errs, fmt.Errorf("configuration: auth: %w", err))
		}
		opts.Auth = a
	}
	var disclosed []string
	for _, name := range names {
		s := cfg.Servers[name]
		if s == nil {
			errs = append(errs, fmt.Errorf("configuration: servers.%s: empty server", name))
			continue
		}
		if len(names) > 1 && s.Prefix == "" {
			errs = append(errs, fmt.Errorf("configuration: servers.%s.prefix: the gateway prefixes every server's names when it fronts more than one; remove the empty prefix or give one", name))
		}
		if s.Disclose {
			disclosed = append(disclosed, name)
		}
		var transport string
		switch s.Type {
		case config.TransportStdio:
			transport = "stdio"
		case config.TransportHTTP:
			transport = "http"
		case config.TransportSSE:
			transport = "sse"
		case "":
		default:
			errs = append(errs, fmt.Errorf("configuration: servers.%s.type: %q is not a transport the gateway speaks (stdio, http, sse)", name, s.Type))
		}
		opts.Upstreams = append(opts.Upstreams, gateway.UpstreamSpec{
			Name:           name,
			Transport:      transport,
			Command:        s.Command,
			Args:           slices.Clone(s.Args),
			Env:            maps.Clone(s.Env),
			Dir:            s.Cwd,
			URL:            s.URL,
			Headers:        maps.Clone(s.Headers),
			BearerTokenEnv: s.BearerTokenEnv,
			OAuth:          upstreamOAuth(s),
			Lazy:           s.Connect == config.ConnectLazy,
			Prefix:         s.Prefix,
			Separator:      s.Separator,
			Include:        slices.Clone(s.Include),
			Exclude:        slices.Clone(s.Exclude),
			ConnectTimeout: time.Duration(s.Timeouts.Connect),
			ProbeTimeout:   time.Duration(s.Timeouts.Discover),
			CallTimeout:    time.Duration(s.Timeouts.Call),
			StopGrace:      time.Duration(s.Timeouts.Shutdown),
		})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	r, err := RulesResolverFromConfig(cfg, &RulesOptions{Logger: logger})
	if err != nil {
		return nil, err
	}
	opts.Resolver = r
	if opts.Redactor, err = redactorFromConfig(cfg.Redaction); err != nil {
		return nil, err
	}
	if opts.Decisions, err = DecisionsFromConfig(cfg); err != nil {
		return nil, err
	}
	opts.Flow = FlowFromConfig(cfg)
	if rt := cfg.Retry; rt != (config.Retry{}) {
		opts.Retry = &forward.RetryPolicy{Attempts: rt.Attempts, Initial: time.Duration(rt.Backoff), Max: time.Duration(rt.MaxBackoff),
			Within: time.Duration(rt.Within), Budget: rt.Budget, Refill: time.Duration(rt.Refill)}
	}
	if e := cfg.Metrics.Enabled; e != nil && !*e {
		opts.Metrics = &gateway.MetricsOptions{Off: true}
	}
	if len(disclosed) > 0 {
		d := &gateway.Disclosure{Servers: disclosed, Options: disclose.Options{TTL: time.Duration(cfg.Disclosure.TTL)}}
		if cfg.Disclosure.Store == config.StoreRedis {
			ropts, err := redis.ParseURL(cfg.Redis.URL)
			if err != nil {
				return nil, fmt.Errorf("configuration: redis.url: %w", err)
			}
			prefix := cfg.Redis.Prefix
			if prefix == "" {
				prefix = config.DefaultRedisPrefix
			}
			client := redis.NewClient(ropts)
			d.Options.Store = redisstore.New(client, &redisstore.Options{Prefix: prefix + "disclose:"})
			d.Close = client.Close
			opts.Stores = append(opts.Stores, redisCheck("disclosure", client))
		} else {
			opts.Stores = append(opts.Stores, gateway.StoreCheck{Keeps: "disclosure", At: "memory"})
		}
		opts.Disclosure = d
	}
	if !cfg.RequestState.IsZero() {
		if len(cfg.RequestState.Keys) == 0 {
			return nil, errors.New("configuration: requestState.keysFile: the keys were not read (read the file with config.Load)")
		}
		ring, err := requeststate.NewRing(cfg.RequestState.Keys, nil)
		if err != nil {
			return nil, fmt.Errorf("configuration: requestState: %w", err)
		}
		opts.Ring = ring
		if opts.Flow != nil {
			// Replicas share the requestState keys, and so the flows'.
			opts.Flow.Secret = cfg.RequestState.Keys[0].Secret
		}
	}
	if cfg.Redis.URL != "" {
		// Single-use confirmations (and approval notifications) need the
		// state every replica shares.
		prefix := cmp.Or(cfg.Redis.Prefix, config.DefaultRedisPrefix)
		st, err := state.Open(cfg.Redis.URL, &state.Options{Prefix: prefix + "state:"})
		if err != nil {
			_ = opts.Close()
			return nil, fmt.Errorf("configuration: redis: %w", err)
		}
		opts.State = st
		opts.Closers = append(opts.Closers, st.Close)
	}
	if !cfg.Approvals.IsZero() {
		if err := approvalsFromConfig(ctx, cfg, opts); err != nil {
			_ = opts.Close()
			return nil, err
		}
	}
	if pinning(cfg) {
		store, err := OpenPinStore(ctx, cfg.Pins)
		if err != nil {
			_ = opts.Close()
			return nil, err
		}
		opts.Pinner = pin.New(store, &pin.Options{Mode: PinModes(cfg), Store: sqlitePins(cfg.Pins)})
		opts.Closers = append(opts.Closers, store.Close)
		opts.Stores = append(opts.Stores, SQLCheck("pins", store))
	}
	if signsIn(cfg) {
		v, err := OpenVault(ctx, cfg.Vault)
		if err != nil {
			_ = opts.Close()
			return nil, err
		}
		opts.Vault = v
		opts.Closers = append(opts.Closers, v.Close)
		opts.Stores = append(opts.Stores, SQLCheck("vault", v))
	}
	if cfg.Audit.Store != config.AuditOff {
		if err := auditFromConfig(ctx, cfg.Audit, opts); err != nil {
			_ = opts.Close()
			return nil, err
		}
	}
	if cfg.Tracing.Enabled {
		tp, shutdown, err := TracerProvider(cfg.Tracing)
		if err != nil {
			_ = opts.Close()
			return nil, err
		}
		opts.TracerProvider = tp
		opts.Closers = append(opts.Closers, shutdown)
	}
	return opts, nil
}

// openTimeout bounds opening a store named by the configuration (a
// PostgreSQL server may be unreachable).
const openTimeout = 30 * time.Second

// approvalsFromConfig makes opts.Approvals: its store as approvals.store
// says (in this process, an SQLite file, or PostgreSQL), and its
// notifications over the Redis of redis.url when there is one (so that an
// approval given on one replica releases the call waiting on another),
// in this process otherwise. What it opens, Gateway.Close closes.
func approvalsFromConfig(ctx context.Context, cfg *config.Config, opts *gateway.Options) error {
	a := cfg.Approvals
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	var store approval.Store
	switch a.Store {
	case config.ApprovalsSQLite, config.ApprovalsPostgres:
		open := func() (*approvalsql.Store, error) {
			path, err := a.SQLitePath()
			if err != nil {
				return nil, err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, err
			}
			return approvalsql.Open(ctx, "sqlite:"+path, nil)
		}
		if a.Store == config.ApprovalsPostgres {
			open = func() (*approvalsql.Store, error) { return approvalsql.Open(ctx, a.URL, nil) }
		}
		s, err := open()
		if err != nil {
			return fmt.Errorf("configuration: approvals.store: %w", err)
		}
		opts.Closers = append(opts.Closers, s.Close)
		opts.Stores = append(opts.Stores, SQLCheck("approvals", s))
		store = s
	default:
		opts.Stores = append(opts.Stores, gateway.StoreCheck{Keeps: "approvals", At: "memory"})
	}
	o := &approval.Options{TTL: time.Duration(a.TTL), UseWindow: time.Duration(a.UseWindow), Admins: slices.Clone(a.Admins), Logger: opts.Logger}
	if opts.State != nil {
		o.Notifier = approval.BusNotifier(opts.State.Bus)
	}
	opts.Approvals = approval.New(store, o)
	return nil
}

// pinning reports whether some server's definitions are pinned.
func pinning(cfg *config.Config) bool {
	for _, s := range cfg.Servers {
		if s != nil && s.Pin != config.PinOff {
			return true
		}
	}
	return false
}

// PinModes returns each server's pin mode as the configuration says (a
// server it does not name is strict).
func PinModes(cfg *config.Config) func(server string) pin.Mode {
	modes := make(map[string]pin.Mode, len(cfg.Servers))
	for name, s := range cfg.Servers {
		if s != nil {
			modes[name] = pin.Mode(s.Pin)
		}
	}
	return func(server string) pin.Mode {
		if m, ok := modes[server]; ok {
			return m
		}
		return pin.ModeStrict
	}
}

// OpenPinStore opens the pin store of a configuration's pins section: its
// SQLite file (the default one, in config.DefaultStateDir, is created with
// its directory) or its PostgreSQL database. The gateway and the
// preflight pins command open the same store from the same file.
func OpenPinStore(ctx context.Context, p config.Pins) (*sqlstore.Store, error) {
	spec, err := p.Spec()
	if err != nil {
		return nil, fmt.Errorf("configuration: pins: %w", err)
	}
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("configuration: pins.path: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	store, err := sqlstore.Open(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("configuration: pins: the pin store: %w", err)
	}
	return store, nil
}

// sqlitePins is an SQLite pin store as preflight pins -store takes it, ""
// for a PostgreSQL one, whose address is not told to clients.
func sqlitePins(p config.Pins) string {
	if spec, err := p.Spec(); err == nil && strings.HasPrefix(spec, "sqlite:") {
		return spec
	}
	return ""
}

// redactorFromConfig returns the Redactor of the redaction section, nil
// when it redacts and withholds nothing.
func redactorFromConfig(r config.Redaction) (*redact.Redactor, error) {
	if r.Level == config.RedactionOff && r.Withhold == config.RedactionOff {
		return nil, nil
	}
	o := &redact.Options{From: hints.Sensitivity(r.Level), Withhold: hints.Sensitivity(r.Withhold),
		Sensitive: r.Sensitive, PhoneRegion: r.PhoneRegion}
	for _, k := range r.Kinds {
		o.Kinds = append(o.Kinds, redact.Kind(k))
	}
	red, err := redact.New(o)
	if err != nil {
		return nil, fmt.Errorf("configuration: redaction: %w", err)
	}
	return red, nil
}

// auditFromConfig opens the audit section's store and sets opts.Auditor
// and opts.AuditStore.
func auditFromConfig(ctx context.Context, a config.Audit, opts *gateway.Options) error {
	spec, err := a.StoreSpec(os.LookupEnv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ao := &audit.Options{OnUnavailable: audit.FailurePolicy(a.OnUnavailable), Levels: map[hints.Effect]audit.Level{
		hints.EffectRead: audit.Level(a.Levels.Read), hints.EffectWrite: audit.Level(a.Levels.Write),
		hints.EffectExternal: audit.Level(a.Levels.External), hints.EffectDelete: audit.Level(a.Levels.Delete),
	}}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	auditor, store, err := OpenAudit(ctx, spec, ao)
	if err != nil {
		return fmt.Errorf("configuration: audit: %w", err)
	}
	opts.Auditor, opts.AuditStore, opts.AuditSensitiveArgs = auditor, store, slices.Clone(a.SensitiveArguments)
	opts.Stores = append(opts.Stores, SQLCheck("audit", store))
	return nil
}

// SQLStore is a store in an SQL database (package sqldb's).
type SQLStore interface {
	String() string
	Ping(context.Context) error
}

// SQLCheck names a store in SQL for the health report.
func SQLCheck(keeps string, s SQLStore) gateway.StoreCheck {
	return gateway.StoreCheck{Keeps: keeps, At: s.String(), Ping: s.Ping}
}

// OpenAudit opens the audit store spec names (package audit/sqlstore:
// sqlite:PATH, whose directory it creates, or a postgres:// URL) and an
// Auditor writing to it, for the gateway's Options.Auditor and
// Options.AuditStore.
func OpenAudit(ctx context.Context, spec string, o *audit.Options) (*audit.Auditor, *auditsql.Store, error) {
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok && path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, nil, err
		}
	}
	store, err := auditsql.Open(ctx, spec, nil)
	if err != nil {
		return nil, nil, err
	}
	auditor, err := audit.New(store, o)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return auditor, store, nil
}

// DecisionsFromConfig maps the decisions section and the servers'
// decisions modes onto the gateway's decision options, and compiles the
// rules' expressions: a rule that does not compile is an error naming it.
func DecisionsFromConfig(cfg *config.Config) (*stage.DecideOptions, error) {
	d := &stage.DecideOptions{Mode: stage.Enforce}
	if cfg.Decisions.Mode == config.DecisionsDryRun {
		d.Mode = stage.DryRun
	}
	for _, name := range cfg.Names() {
		if s := cfg.Servers[name]; s != nil && s.Decisions != "" && string(s.Decisions) != string(d.Mode) {
			if d.Servers == nil {
				d.Servers = map[string]stage.Mode{}
			}
			d.Servers[name] = stage.Mode(s.Decisions)
		}
	}
	if cfg.Flow.Action == config.FlowDeny {
		d.Flow = call.Deny
	}
	for _, r := range cfg.Decisions.Rules {
		d.Rules = append(d.Rules, stage.DecisionRule{Name: r.Name, Servers: slices.Clone(r.Servers), Tools: slices.Clone(r.Tools),
			When: r.When, Verdict: call.Verdict(r.Decision), OutOfBand: r.Approval == config.ApprovalHuman, Reason: r.Reason})
	}
	if _, err := stage.NewDecider(d); err != nil {
		return nil, fmt.Errorf("configuration: decisions: %w", err)
	}
	return d, nil
}

// FlowFromConfig maps the flow section and the servers' flow modes onto
// the gateway's flow options; nil when flow.action is off. The action is
// the decisions' (DecisionsFromConfig).
func FlowFromConfig(cfg *config.Config) *gateway.FlowOptions {
	f := cfg.Flow
	if f.Action == config.FlowOff {
		return nil
	}
	o := &gateway.FlowOptions{Sensitivity: f.Sensitivity, TTL: time.Duration(f.TTL), Max: f.Max}
	for _, name := range cfg.Names() {
		if s := cfg.Servers[name]; s != nil && s.Flow != "" && s.Flow != config.ServerFlowOn {
			if o.Servers == nil {
				o.Servers = map[string]stage.FlowMode{}
			}
			o.Servers[name] = stage.FlowMode(s.Flow)
		}
	}
	return o
}

// AuthOptions are the options of package auth for the configuration's auth
// section, for a gateway listening on addr.
func AuthOptions(c config.Auth, addr string) *auth.Options {
	o := &auth.Options{Addr: addr}
	for _, t := range c.Tokens {
		o.Tokens = append(o.Tokens, auth.Token(t))
	}
	if !c.OAuth.IsZero() {
		algs := make([]string, len(c.OAuth.Algorithms))
		for i, a := range c.OAuth.Algorithms {
			algs[i] = string(a)
		}
		o.OAuth = &auth.OAuth{
			Issuer:          c.OAuth.Issuer,
			Resource:        c.OAuth.Resource,
			Audience:        c.OAuth.Audience,
			JWKSURL:         c.OAuth.JWKSURL,
			Algorithms:      algs,
			Scopes:          c.OAuth.Scopes,
			PrincipalClaim:  c.OAuth.PrincipalClaim,
			ClockSkew:       time.Duration(c.OAuth.ClockSkew),
			JWKSRefresh:     time.Duration(c.OAuth.JWKSRefresh),
			JWKSMinInterval: time.Duration(c.OAuth.JWKSMinInterval),
		}
	}
	return o
}
