package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/audit"
	"github.com/preflightmcp/preflight/gateway/audit/auditstore"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/redact"
	"github.com/preflightmcp/preflight/gateway/redisstore"
	"github.com/preflightmcp/preflight/hints"
)

// OptionsFromConfig maps a configuration read by package config onto
// Options: each server becomes an UpstreamSpec (in the order of their
// names), and the servers' trust, overrides and rules a Resolver of
// deployer rules and the shipped rules pack ([RulesResolver]).
//
// What the configuration sets and the gateway cannot do is an error naming
// the key, never silently dropped: client authentication (auth), and a
// server left unprefixed in front of several. Listen is left to the
// command that serves the gateway. Servers whose disclose is true
// (disclosure.enabled is its default) become [Options.Disclosure], with
// disclosure.ttl and, for disclosure.store redis, a gateway/redisstore
// store on redis.url under redis.prefix + "disclose:", whose client
// [Gateway.Close] closes. The audit section opens its store (SQLite at
// audit.path or [config.DefaultAuditPath], or PostgreSQL) into
// [Options.Auditor] and [Options.AuditStore], which Gateway.Close
// closes; the redaction section becomes [Options.Redactor].
func OptionsFromConfig(cfg *config.Config) (*Options, error) {
	if cfg == nil || len(cfg.Servers) == 0 {
		return nil, errors.New("configuration: servers: at least one server is required")
	}
	var errs []error
	if !cfg.Auth.IsZero() {
		errs = append(errs, errors.New("configuration: auth: the gateway does not authenticate clients yet; remove auth and serve on a loopback address"))
	}
	names := cfg.Names()
	opts := &Options{}
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
		opts.Upstreams = append(opts.Upstreams, UpstreamSpec{
			Name:           name,
			Transport:      transport,
			Command:        s.Command,
			Args:           slices.Clone(s.Args),
			Env:            maps.Clone(s.Env),
			Dir:            s.Cwd,
			URL:            s.URL,
			Headers:        maps.Clone(s.Headers),
			BearerTokenEnv: s.BearerTokenEnv,
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
	r, err := RulesResolverFromConfig(cfg, nil)
	if err != nil {
		return nil, err
	}
	opts.Resolver = r
	if opts.Redactor, err = redactorFromConfig(cfg.Redaction); err != nil {
		return nil, err
	}
	if len(disclosed) > 0 {
		d := &Disclosure{Servers: disclosed, Options: disclose.Options{TTL: time.Duration(cfg.Disclosure.TTL)}}
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
		}
		opts.Disclosure = d
	}
	if cfg.Audit.Store != config.AuditOff {
		if err := auditFromConfig(cfg.Audit, opts); err != nil {
			if d := opts.Disclosure; d != nil && d.Close != nil {
				d.Close()
			}
			return nil, err
		}
	}
	return opts, nil
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
func auditFromConfig(a config.Audit, opts *Options) error {
	spec, err := a.StoreSpec(os.LookupEnv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ao := &audit.Options{OnUnavailable: audit.FailurePolicy(a.OnUnavailable), Levels: map[hints.Effect]audit.Level{
		hints.EffectRead: audit.Level(a.Levels.Read), hints.EffectWrite: audit.Level(a.Levels.Write),
		hints.EffectExternal: audit.Level(a.Levels.External), hints.EffectDelete: audit.Level(a.Levels.Delete),
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	auditor, store, err := OpenAudit(ctx, spec, ao)
	if err != nil {
		return fmt.Errorf("configuration: audit: %w", err)
	}
	opts.Auditor, opts.AuditStore, opts.AuditSensitiveArgs = auditor, store, slices.Clone(a.SensitiveArguments)
	return nil
}

// OpenAudit opens the audit store spec names (package auditstore:
// sqlite:PATH, whose directory it creates, or a postgres:// URL) and an
// Auditor writing to it, for [Options.Auditor] and [Options.AuditStore].
func OpenAudit(ctx context.Context, spec string, o *audit.Options) (*audit.Auditor, audit.Store, error) {
	if path, ok := strings.CutPrefix(spec, "sqlite:"); ok && path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, nil, err
		}
	}
	store, err := auditstore.Open(ctx, spec, nil)
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
