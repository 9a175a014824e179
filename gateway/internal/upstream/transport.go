package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// transport returns a new transport for one connection attempt, with raw
// result capture installed.
func (c *Conn) transport(ctx context.Context, f *flow) (mcp.Transport, error) {
	s := c.spec
	if s.Connect != nil {
		t, err := s.Connect(ctx)
		if err != nil {
			return nil, err
		}
		return wrapTransport{t, f}, nil
	}
	switch s.Transport {
	case TransportStdio:
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Dir = s.Dir
		cmd.Env = os.Environ()
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			cmd.Env = append(cmd.Env, k+"="+s.Env[k])
		}
		cmd.Stderr = &lineLogger{logger: c.logger, max: DefaultMaxStderrLine, tail: &c.stderr}
		cmd.WaitDelay = s.StopGrace
		return wrapTransport{&mcp.CommandTransport{Command: cmd, TerminateDuration: s.StopGrace}, f}, nil
	case TransportHTTP:
		hc, err := c.httpClient(c.ownIdentity(ctx))
		if err != nil {
			return nil, err
		}
		raw := &http.Client{Transport: hc.Transport}
		c.mu.Lock()
		c.rawClient = raw
		c.mu.Unlock()
		hc.Transport = captureTransport{base: hc.Transport, flow: f}
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}, nil
	case TransportSSE:
		hc, err := c.httpClient(c.ownIdentity(ctx))
		if err != nil {
			return nil, err
		}
		return wrapTransport{&mcp.SSEClientTransport{Endpoint: s.URL, HTTPClient: hc}, f}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", s.Transport)
}

// ownIdentity returns, for an upstream that signs in, whose grant the
// connection about to be made carries (who connected the upstream first,
// or the shared grant), and records it; nil for other upstreams.
func (c *Conn) ownIdentity(ctx context.Context) *string {
	if c.spec.SignIn == nil {
		return nil
	}
	p, ok := c.spec.SignIn.Identity(ctx, c.spec.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok {
		c.identity = nil // the attempt's requests fail: nobody has connected it
		return nil
	}
	c.identity = &p
	return &p
}

// httpClient returns a client that sends the upstream's headers and bearer
// token; for an upstream that signs in, each request carries the grant of
// the principal it is made for, and the gateway's own requests own's
// grant (the identity of the session the client serves; nil: whoever
// connected the upstream first). Its connection pool is the upstream's own
// and keeps enough idle connections for concurrent calls.
func (c *Conn) httpClient(own *string) (*http.Client, error) {
	h := http.Header{}
	for k, v := range c.spec.Headers {
		h.Set(k, v)
	}
	if env := c.spec.BearerTokenEnv; env != "" {
		tok, ok := os.LookupEnv(env)
		if !ok || strings.TrimSpace(tok) == "" {
			return nil, fmt.Errorf("bearer token: environment variable %s is not set", env)
		}
		h.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
	}
	c.pool.Do(func() {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConns = 256
		t.MaxIdleConnsPerHost = 64
		t.IdleConnTimeout = 90 * time.Second
		c.mu.Lock()
		c.roundTripper = t
		c.mu.Unlock()
	})
	c.mu.Lock()
	var rt http.RoundTripper = c.roundTripper
	c.mu.Unlock()
	return &http.Client{Transport: headerTransport{base: rt, header: h, signIn: c.spec.SignIn, name: c.spec.Name, host: hostOf(c.spec.URL), own: own}}, nil
}

// headerTransport sends the upstream's own headers with every request,
// and no credential of anyone else's (auth.StripCredentials): a client's
// token is never passed through. An upstream that signs in gets the
// grant of the principal the request is made for (or, for the gateway's
// own requests, own's, else the current identity's), and its refusals are
// reported back.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	signIn SignIn
	name   string
	host   string // the upstream's host[:port]
	own    *string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	req = req.Clone(ctx)
	auth.StripCredentials(req.Header)
	for k, vs := range t.header {
		req.Header[k] = vs
	}
	if t.signIn == nil || req.URL.Host != t.host {
		// A grant goes to the upstream's own host only, not to where a
		// redirect or an SSE endpoint event points.
		return t.base.RoundTrip(req)
	}
	p, ok := t.signIn.Principal(ctx, t.name)
	switch {
	case ok:
	case t.own != nil:
		p, ok = *t.own, true
	default:
		p, ok = t.signIn.Identity(ctx, t.name)
	}
	a, err := "", ErrNotSignedIn
	if ok {
		a, err = t.signIn.Authorization(ctx, t.name, p)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	req.Header.Set("Authorization", a)
	resp, err := t.base.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.signIn.Refused(ctx, t.name, p, resp)
	}
	return resp, err
}

// hostOf returns the host[:port] of an upstream's URL.
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}

// ErrNotSignedIn is returned for the gateway's own request to an upstream
// nobody has connected.
var ErrNotSignedIn = errors.New("nobody has connected the upstream yet")

// wrapTransport wraps the connection of a transport in a captureConn.
type wrapTransport struct {
	mcp.Transport
	flow *flow
}

// Connect connects within ctx, but the connection outlives it: the HTTP+SSE
// transport holds its event stream in the context it connects with, and a
// connection attempt's context ends when the attempt does.
func (w wrapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := w.Transport.Connect(cctx)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			conn.Close()
			err = ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	return &captureConn{Connection: conn, flow: w.flow}, nil
}

// lineLogger logs what a stdio server writes to stderr, one record per
// line, lines cut at max bytes and stripped of control characters, and
// keeps the last ones in tail.
type lineLogger struct {
	logger *slog.Logger
	max    int
	tail   *stderrTail // nil: none kept
	mu     sync.Mutex
	buf    []byte
	cut    bool // the current line was already cut and logged
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !l.cut {
			room := l.max - len(l.buf)
			if len(chunk) > room {
				l.buf = append(l.buf, chunk[:room]...)
				l.emit(true)
				l.cut = true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		if !l.cut {
			l.emit(false)
		}
		l.buf, l.cut = l.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineLogger) emit(truncated bool) {
	line := text.Sanitize(string(bytes.TrimRight(l.buf, "\r")))
	if line == "" {
		return
	}
	if l.tail != nil {
		l.tail.add(line)
	}
	if truncated {
		l.logger.Info("upstream stderr", "line", line, "truncated", true)
		return
	}
	l.logger.Info("upstream stderr", "line", line)
}
