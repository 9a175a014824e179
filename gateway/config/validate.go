package config

import (
	"net"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/preflightmcp/preflight/gateway/internal/loopback"
)

// Limits on names.
const (
	maxName   = 64 // server, rule and prefix names
	maxSep    = 8  // separators
	maxPrefix = 64
)

// validate checks what decoding cannot (values that depend on each other)
// and applies the defaults.
func (p *parser) validate(c *Config) {
	if len(c.Servers) == 0 {
		p.fail(p.section, "no servers: at least one is required")
	}
	for _, name := range sortedKeys(c.Servers) {
		p.server(c, name, c.Servers[name])
	}
	p.prefixes(c)

	if c.Disclosure.Store == "" {
		c.Disclosure.Store = StoreMemory
	}
	if c.Disclosure.TTL == 0 {
		c.Disclosure.TTL = Duration(DefaultDisclosureTTL)
	}
	if c.Disclosure.Store == StoreRedis && c.Redis.URL == "" {
		p.fail("disclosure.store", "redis needs the Redis server in redis.url")
	}
	if p.dec.set("redis") {
		p.redis(&c.Redis)
	}
	p.auth(&c.Auth)
	if p.dec.set("requestState") {
		p.requestState(&c.RequestState)
	}
	if p.dec.set("approvals") {
		p.approvals(&c.Approvals)
	}
	if c.Redis.URL != "" && c.Approvals.PageURL == "" && !p.dec.failed["redis.url"] {
		// Replicas share Redis: the page's links must name the address
		// people reach, not whichever replica made them. Told at redis.url,
		// the key that makes it required.
		p.errs.add(p.dec.at("redis.url"), "approvals.pageUrl", "required with redis.url (replicas share Redis): the approval page's address as people reach it, "+
			"such as the load balancer's https://mcp.example.com/ui, so that the links clients are given and the login links replicas print work on every replica")
	}
	p.pins(&c.Pins)
	p.vault(&c.Vault)
	p.audit(&c.Audit)
	p.redaction(&c.Redaction)
	p.decisions(c)
	p.flow(&c.Flow)
	for _, name := range sortedKeys(c.Servers) {
		if s := c.Servers[name]; s != nil && s.Decisions == "" {
			s.Decisions = c.Decisions.Mode
		}
		if s := c.Servers[name]; s != nil && s.Flow == "" {
			s.Flow = ServerFlowOn
		}
	}
	p.retry(&c.Retry)
	p.tracing(&c.Tracing)
	for _, c := range []struct {
		key string
		n   int
	}{{"listen.maxSessions", c.Listen.MaxSessions}, {"listen.maxSessionsPerPrincipal", c.Listen.MaxSessionsPerPrincipal}} {
		if p.dec.set(c.key) && (c.n < 1 || c.n > MaxSessionsCap) {
			p.fail(c.key, "%d sessions: want 1 to %d", c.n, MaxSessionsCap)
		}
	}
	switch {
	case c.Listen.HTTP == "":
	case !validAddr(c.Listen.HTTP):
		p.fail("listen.http", "%s is not host:port (such as 127.0.0.1:8080)", quote(c.Listen.HTTP))
	case c.Auth.IsZero() && !loopback.Is(c.Listen.HTTP):
		p.fail("listen.http", "%s is not a loopback address, and auth is not set: without authentication the gateway serves only 127.0.0.1, [::1] or localhost; add auth.tokens or auth.oauth", quote(c.Listen.HTTP))
	}
}

func (p *parser) server(c *Config, name string, s *Server) {
	at := func(key string) string { return p.serverPath(name, key) }
	if name == "" || utf8.RuneCountInString(name) > maxName || hasControl(name) {
		p.fail(at(""), "a server's name has 1 to %d characters, none of them control characters", maxName)
	}

	if s.Type == "" {
		switch {
		case s.Command != "" && s.URL != "":
			p.fail(at(""), "has both command and url: keep command for a stdio server or url for an http or sse one")
		case s.Command != "":
			s.Type = TransportStdio
		case s.URL != "":
			s.Type = TransportHTTP
		default:
			p.fail(at(""), "needs command (a stdio server) or url (an http or sse server)")
		}
	}
	switch {
	case p.dec.failed[at("type")]:
		// Which fields belong is unknown; the type's problem is reported.
	case s.Type == TransportStdio:
		p.stdio(at, s)
	case s.Type == TransportHTTP, s.Type == TransportSSE:
		p.remote(at, s)
	}
	p.signIn(at, s)

	if p.dec.set(at("prefix")) {
		if !validToolChars(s.Prefix) || len(s.Prefix) > maxPrefix {
			p.fail(at("prefix"), "%s is not a prefix (up to %d of the characters A-Z a-z 0-9 _ . -)", quote(s.Prefix), maxPrefix)
		}
	} else if len(c.Servers) > 1 {
		s.Prefix = prefixOf(name)
	}
	if !p.dec.set(at("separator")) {
		s.Separator = DefaultSeparator
	} else if s.Separator == "" || len(s.Separator) > maxSep || !validToolChars(s.Separator) {
		p.fail(at("separator"), "%s is not a separator (1 to %d of the characters A-Z a-z 0-9 _ . -, such as __ or .)", quote(s.Separator), maxSep)
	}
	for _, f := range []struct {
		key      string
		patterns []string
	}{{"include", s.Include}, {"exclude", s.Exclude}} {
		for i, pat := range f.patterns {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				p.fail(index(at(f.key), i), "%s is not a glob pattern (* any characters, ? one, [a-z] one of a class)", quote(pat))
			}
		}
	}
	if s.Connect == "" {
		s.Connect = ConnectEager
	}
	if s.Trust == "" {
		s.Trust = Trusted
	}
	if s.Pack == "" {
		s.Pack = PackAuto
	}
	if s.Pin == "" {
		// An untrusted server's every change is held for review; a
		// trusted server's routine upgrades are logged, and only a change
		// that removes caution is held.
		s.Pin = PinWarn
		if s.Trust == Untrusted {
			s.Pin = PinStrict
		}
	}
	p.timeouts(at, &s.Timeouts)
	if !p.dec.set(at("disclose")) {
		s.Disclose = c.Disclosure.Enabled
	}
	for _, tool := range sortedKeys(s.Overrides) {
		o := s.Overrides[tool]
		if tool == "" {
			p.fail(join(at("overrides"), tool), "a tool name cannot be empty")
		} else if o.Annotations.IsZero() && o.Hints.IsZero() {
			p.fail(join(at("overrides"), tool), "sets no annotation or hint")
		}
	}
	p.rules(at, s)

	// One spelling of "none", so that equal configs compare equal.
	if len(s.Args) == 0 {
		s.Args = nil
	}
	if len(s.Env) == 0 {
		s.Env = nil
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	if len(s.Include) == 0 {
		s.Include = nil
	}
	if len(s.Exclude) == 0 {
		s.Exclude = nil
	}
	if len(s.Overrides) == 0 {
		s.Overrides = nil
	}
	if len(s.Rules) == 0 {
		s.Rules = nil
	}
}

func (p *parser) stdio(at func(string) string, s *Server) {
	if s.Command == "" {
		p.fail(at("command"), "required for a stdio server")
	} else if strings.ContainsRune(s.Command, 0) {
		p.fail(at("command"), "contains a NUL character")
	}
	for _, f := range []struct {
		key string
		set bool
	}{{"url", s.URL != ""}, {"headers", len(s.Headers) > 0}, {"bearerTokenEnv", s.BearerTokenEnv != ""}} {
		if f.set {
			p.fail(at(f.key), "not allowed for a stdio server (it is for http and sse servers)")
		}
	}
	for i, a := range s.Args {
		if strings.ContainsRune(a, 0) {
			p.fail(index(at("args"), i), "contains a NUL character")
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			p.fail(join(at("env"), k), "not a variable name (it must be non-empty, without = or NUL)")
		} else if strings.ContainsRune(s.Env[k], 0) {
			p.fail(join(at("env"), k), "the value contains a NUL character")
		}
	}
	s.Cwd = p.resolve(s.Cwd)
	s.EnvFile = p.resolve(s.EnvFile)
	for _, f := range []struct{ key, v string }{{"cwd", s.Cwd}, {"envFile", s.EnvFile}} {
		if strings.ContainsRune(f.v, 0) {
			p.fail(at(f.key), "contains a NUL character")
		}
	}
	if p.files && s.EnvFile != "" && !p.dec.related(at("envFile")) {
		vals, err := readEnvFile(s.EnvFile)
		if err != nil {
			p.fail(at("envFile"), "%s", err)
			return
		}
		for k, v := range s.Env {
			vals[k] = v // env wins over the file
		}
		s.Env = vals
	}
}

func (p *parser) remote(at func(string) string, s *Server) {
	if s.URL == "" {
		p.fail(at("url"), "required for an %s server", s.Type)
	} else if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// The URL is not repeated: it may hold a token.
		p.fail(at("url"), "not an http:// or https:// URL with a host")
	}
	for _, f := range []struct {
		key string
		set bool
	}{{"command", s.Command != ""}, {"args", len(s.Args) > 0}, {"env", len(s.Env) > 0}, {"envFile", s.EnvFile != ""}, {"cwd", s.Cwd != ""}} {
		if f.set {
			p.fail(at(f.key), "not allowed for an %s server (it is for stdio servers)", s.Type)
		}
	}
	for _, h := range sortedKeys(s.Headers) {
		hp := join(at("headers"), h)
		switch lower := strings.ToLower(h); {
		case !validToken(h):
			p.fail(hp, "not a header name")
		case strings.HasPrefix(lower, "mcp-") || reservedHeaders[lower]:
			p.fail(hp, "set by the gateway on each request; it cannot be configured")
		case lower == "authorization" && s.BearerTokenEnv != "":
			p.fail(hp, "set by bearerTokenEnv too: keep one")
		case strings.ContainsFunc(s.Headers[h], func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
			p.fail(hp, "the value contains a control character")
		}
	}
	if s.BearerTokenEnv != "" {
		if !validEnvName(s.BearerTokenEnv) {
			p.fail(at("bearerTokenEnv"), "%s is not a variable name (letters, digits and _, not starting with a digit)", quote(s.BearerTokenEnv))
		} else if v, ok := p.env(s.BearerTokenEnv); !ok || v == "" {
			p.fail(at("bearerTokenEnv"), "environment variable %s is not set", s.BearerTokenEnv)
		} else if strings.ContainsFunc(v, unicode.IsControl) {
			p.fail(at("bearerTokenEnv"), "environment variable %s holds a control character", s.BearerTokenEnv)
		} else {
			s.BearerToken = v
		}
	}
}

// reservedHeaders are set by the transports; Mcp-* headers are too.
var reservedHeaders = map[string]bool{
	"accept": true, "content-type": true, "content-length": true, "transfer-encoding": true,
	"connection": true, "host": true,
}

func (p *parser) timeouts(at func(string) string, t *Timeouts) {
	for _, d := range []struct {
		v   *Duration
		def time.Duration
	}{
		{&t.Connect, DefaultConnectTimeout},
		{&t.Discover, DefaultDiscoverTimeout},
		{&t.Call, DefaultCallTimeout},
		{&t.Shutdown, DefaultShutdownTimeout},
	} {
		if *d.v == 0 {
			*d.v = Duration(d.def)
		}
	}
	if t.Discover > t.Connect {
		p.fail(at("timeouts.discover"), "%s is longer than timeouts.connect (%s), which bounds it", time.Duration(t.Discover), time.Duration(t.Connect))
	}
}

func (p *parser) rules(at func(string) string, s *Server) {
	first := map[string]int{}
	for i := range s.Rules {
		r := &s.Rules[i]
		rp := index(at("rules"), i)
		switch j, dup := first[r.Name]; {
		case r.Name == "":
			p.fail(rp+".name", "required: a rule's name identifies it in errors and logs")
		case utf8.RuneCountInString(r.Name) > maxName || hasControl(r.Name):
			p.fail(rp+".name", "a rule's name has 1 to %d characters, none of them control characters", maxName)
		case dup:
			p.fail(rp+".name", "%s is also the name of rules[%d]", quote(r.Name), j)
		default:
			first[r.Name] = i
		}
		if r.Tool == "" {
			r.Tool = "*"
		} else if _, err := path.Match(r.Tool, ""); err != nil {
			p.fail(rp+".tool", "%s is not a glob pattern (* any characters, ? one, [a-z] one of a class)", quote(r.Tool))
		}
		if r.Annotations.IsZero() && r.Hints.IsZero() {
			p.fail(rp, "sets no annotation or hint")
		}
	}
}

// prefixes checks that no two servers share a prefix.
func (p *parser) prefixes(c *Config) {
	owner := map[string]string{}
	for _, name := range sortedKeys(c.Servers) {
		s := c.Servers[name]
		if s.Prefix == "" {
			continue
		}
		other, dup := owner[s.Prefix]
		switch {
		case !dup:
			owner[s.Prefix] = name
		case p.dec.set(p.serverPath(name, "prefix")):
			p.fail(p.serverPath(name, "prefix"), "%s is also the prefix of server %s", quote(s.Prefix), quote(other))
		default:
			p.fail(p.serverPath(name, ""), "its prefix %s, made from its name, is also the prefix of server %s: set prefix", quote(s.Prefix), quote(other))
		}
	}
}

func (p *parser) redis(r *Redis) {
	if r.URL == "" {
		p.fail("redis.url", "required: the Redis server, as redis://host:port, rediss://host:port or unix:///path")
		return
	}
	u, err := url.Parse(r.URL)
	switch {
	case err != nil,
		(u.Scheme == "redis" || u.Scheme == "rediss") && u.Host == "",
		u.Scheme == "unix" && u.Path == "",
		u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix":
		// The URL is not repeated: it may hold a password.
		p.fail("redis.url", "not a Redis URL (allowed: redis://[user:password@]host:port[/db], rediss://... for TLS, unix:///path)")
	}
	if r.Prefix == "" {
		r.Prefix = DefaultRedisPrefix
	} else if len(r.Prefix) > 128 || hasControl(r.Prefix) {
		p.fail("redis.prefix", "a prefix has up to 128 characters, none of them control characters")
	}
}

// resolve makes a relative path relative to the config file's directory.
func (p *parser) resolve(name string) string {
	if name == "" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(p.dir, name)
}

// prefixOf makes a prefix of a server's name: characters a tool name
// cannot hold become "_".
func prefixOf(name string) string {
	out := []byte(strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && validToolChars(string(r)) {
			return r
		}
		return '_'
	}, name))
	return string(out[:min(len(out), maxPrefix)])
}

// validToolChars reports whether s holds only characters a tool name may.
func validToolChars(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

func validAddr(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 0 && n <= 65535
}

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }
