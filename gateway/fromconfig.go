package gateway

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/pipeline"
	"github.com/preflightmcp/preflight/gateway/redisstore"
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
// [Gateway.Close] closes.
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
	if rt := cfg.Retry; rt != (config.Retry{}) {
		opts.Retry = &pipeline.RetryPolicy{Attempts: rt.Attempts, Initial: time.Duration(rt.Backoff), Max: time.Duration(rt.MaxBackoff),
			Within: time.Duration(rt.Within), Budget: rt.Budget, Refill: time.Duration(rt.Refill)}
	}
	if e := cfg.Metrics.Enabled; e != nil && !*e {
		opts.Metrics = &MetricsOptions{Off: true}
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
	return opts, nil
}
