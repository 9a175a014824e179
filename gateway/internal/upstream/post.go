package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
)

// Passthrough reports whether a 2026-07-28 client's request can be
// forwarded to the upstream as it came: the upstream is up, over
// streamable HTTP, at 2026-07-28 or later. Such requests carry everything
// the upstream needs (protocol version, capabilities) and are answered on
// their own response stream, so the gateway need not decode them.
func (c *Conn) Passthrough() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs != nil && c.era >= EraModern && c.spec.Transport == TransportHTTP && c.spec.Connect == nil && c.rawClient != nil
}

// ErrNoPassthrough is returned by Post when the upstream cannot take a
// request as it came (see Passthrough).
var ErrNoPassthrough = errors.New("upstream cannot take requests as they came")

// Post sends one JSON-RPC request to the upstream's endpoint as it is, with
// header (the client's standard MCP headers) and the upstream's own
// configured headers, and returns the response for the caller to read and
// close. It counts against the upstream's calls in flight until cancel is
// called, and is bounded by CallTimeout. An upstream that is down, a lost
// connection and a timeout are [TransientError]s; the caller classifies
// the response's status.
func (c *Conn) Post(ctx context.Context, body []byte, header http.Header) (*http.Response, context.CancelFunc, error) {
	c.mu.Lock()
	client := c.rawClient
	ok := c.cs != nil && c.era >= EraModern && client != nil
	c.mu.Unlock()
	if !ok {
		return nil, nil, c.downError(ErrNoPassthrough)
	}
	select {
	case c.inflight <- struct{}{}:
	default:
		return nil, nil, fmt.Errorf("upstream %q has %d calls in flight, its limit", c.spec.Name, cap(c.inflight))
	}
	ctx, end := context.WithTimeout(ctx, c.spec.CallTimeout)
	cancel := func() { end(); <-c.inflight }
	s := &sink{}
	req, err := http.NewRequestWithContext(traceWrites(ctx, s), http.MethodPost, c.spec.URL, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, err
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		err = c.classify(ctx, nil, s, fmt.Errorf("upstream %q: %w", c.spec.Name, err))
		cancel()
		return nil, nil, err
	}
	return resp, cancel, nil
}

// SessionPassthrough reports whether a legacy (2025-11-25) client's
// request can be forwarded to the upstream as it came, on the gateway's
// own session with the upstream: the upstream is up, over streamable HTTP,
// in the legacy era, with a session. It returns that session's id, which
// names the session the request goes to (an upstream that reconnected has
// another).
func (c *Conn) SessionPassthrough() (session string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == nil || c.era >= EraModern || c.spec.Transport != TransportHTTP || c.spec.Connect != nil || c.rawClient == nil || c.spec.SignIn != nil {
		return "", false // an upstream that signs in binds sessions to principals (users.go)
	}
	id := c.cs.ID()
	return id, id != ""
}

// ErrSessionGone is returned by PostSession when the upstream's session is
// not the one the request was meant for.
var ErrSessionGone = errors.New("upstream session ended")

// PostSession sends one JSON-RPC message to a legacy upstream on the
// gateway's session with it (see SessionPassthrough), as it is, with
// header (content negotiation) and the upstream's own configured headers,
// and returns the response for the caller to read and close. A request
// (call true) counts against the upstream's calls in flight and is known to
// its call table until done is called; done also ends its context. It is
// bounded by CallTimeout.
func (c *Conn) PostSession(ctx context.Context, session string, body []byte, header http.Header, call bool) (resp *http.Response, done func(), err error) {
	c.mu.Lock()
	client, era := c.rawClient, c.era
	ok := c.cs != nil && c.cs.ID() == session && session != "" && client != nil && era < EraModern
	c.mu.Unlock()
	if !ok {
		return nil, nil, ErrSessionGone
	}
	var leave func()
	if call {
		select {
		case c.inflight <- struct{}{}:
		default:
			return nil, nil, fmt.Errorf("upstream %q has %d calls in flight, its limit", c.spec.Name, cap(c.inflight))
		}
		// Known to the call table, so that a question the upstream sends
		// outside the call's stream is not routed to another call.
		exit := c.calls.enter(nil, nil, nil)
		leave = func() { exit(); <-c.inflight }
	}
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
	done = func() {
		cancel()
		if leave != nil {
			leave()
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.spec.URL, bytes.NewReader(body))
	if err != nil {
		done()
		return nil, nil, err
	}
	if header == nil {
		header = make(http.Header, 4)
	}
	req.Header = header
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", era)
	resp, err = client.Do(req)
	if err != nil {
		done()
		return nil, nil, fmt.Errorf("upstream %q: %w", c.spec.Name, err)
	}
	return resp, done, nil
}
