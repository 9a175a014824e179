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
// close. It is bounded by CallTimeout. An upstream that is down, a lost
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
	ctx, cancel := context.WithTimeout(ctx, c.spec.CallTimeout)
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
