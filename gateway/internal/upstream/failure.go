package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptrace"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Kinds of transient failure.
const (
	// FailDown: the upstream was not connected when the call started; the
	// request was not sent.
	FailDown = "down"
	// FailConnection: the connection to the upstream ended before its
	// response came.
	FailConnection = "connection_lost"
	// FailExited: a stdio upstream's connection ended before its response
	// came (the process exited or closed its output).
	FailExited = "exited"
	// FailTimeout: the call's CallTimeout passed before any response.
	FailTimeout = "timeout"
	// FailHTTP5xx: an HTTP upstream answered the request with a 5xx status
	// and no JSON-RPC response.
	FailHTTP5xx = "http_5xx"
)

// TransientError is a call that failed for a reason a later attempt may
// not meet: the upstream was down, its connection or process was lost,
// it did not answer in time, or it answered HTTP 5xx. It never stands for
// an answer of the upstream (a JSON-RPC error or a tool error), and never
// for the client going away.
type TransientError struct {
	// Upstream is the upstream's name.
	Upstream string
	// Kind is one of the Fail constants.
	Kind string
	// Status is the HTTP status of a FailHTTP5xx.
	Status int
	// Sent reports that the request may have reached the upstream, so its
	// effect may have happened; false means it certainly did not.
	Sent bool
	// Err is the underlying error.
	Err error

	cs *mcp.ClientSession // the session the call failed on, if any
}

func (e *TransientError) Error() string {
	var what string
	switch e.Kind {
	case FailDown:
		what = "is not connected"
	case FailConnection:
		what = "connection lost before the response"
	case FailExited:
		what = "server process ended before the response"
	case FailTimeout:
		what = "did not answer in time"
	case FailHTTP5xx:
		what = fmt.Sprintf("answered HTTP %d", e.Status)
	default:
		what = "failed"
	}
	sent := "the request was not sent"
	if e.Sent {
		sent = "the request was sent"
	}
	msg := fmt.Sprintf("upstream %q %s (%s)", e.Upstream, what, sent)
	if e.Err != nil && e.Kind != FailHTTP5xx && e.Kind != FailTimeout {
		msg += ": " + text.Clip(text.Sanitize(e.Err.Error()), 200)
	}
	return msg
}

func (e *TransientError) Unwrap() error { return e.Err }

// Transient reports whether err is a [TransientError].
func Transient(err error) bool {
	var te *TransientError
	return errors.As(err, &te)
}

// Recover waits until the upstream can take a call again after err, a
// [TransientError] of one of its calls: for a lost connection, or an
// upstream that was down, until it has (re)connected with a new
// connection; for a timeout or an HTTP 5xx, at once. It returns ctx's
// error if that does not happen in time.
func (c *Conn) Recover(ctx context.Context, err error) error {
	var te *TransientError
	if !errors.As(err, &te) {
		return nil
	}
	switch te.Kind {
	case FailTimeout, FailHTTP5xx:
		return nil
	}
	c.Want()
	for {
		c.mu.Lock()
		ready := c.cs != nil && (te.cs == nil || c.cs != te.cs)
		wake := c.wake
		c.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// downError is the failure of a call that found the upstream down.
func (c *Conn) downError(err error) error {
	return &TransientError{Upstream: c.spec.Name, Kind: FailDown, Err: err}
}

// classify turns the failure of one request sent through the sink s on cs
// (within ctx, bounded by CallTimeout) into a TransientError when it is
// one, and returns other errors unchanged.
func (c *Conn) classify(ctx context.Context, cs *mcp.ClientSession, s *sink, err error) error {
	s.mu.Lock()
	written, answered, status := s.written, s.answered, s.status
	s.mu.Unlock()
	te := &TransientError{Upstream: c.spec.Name, Sent: written, Err: err, cs: cs}
	switch {
	case status >= 500:
		te.Kind, te.Status, te.Sent = FailHTTP5xx, status, true
		return te
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		// The call gave up first: a response that came after it (the
		// upstream's answer to the cancellation) does not make this an
		// answer.
		te.Kind = FailTimeout
		te.cs = nil
	case answered, isAnswer(err):
		return err
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		te.Kind = FailTimeout
		te.cs = nil
	case c.spec.Transport == TransportStdio && c.spec.Connect == nil:
		te.Kind = FailExited
	default:
		te.Kind = FailConnection
	}
	return te
}

// isAnswer reports whether err carries a JSON-RPC error the upstream sent,
// rather than one the SDK made up for its own connection (the codes of
// its closing and rejecting transport).
func isAnswer(err error) bool {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return false
	}
	switch we.Code {
	case -32003, -32004, -32005: // jsonrpc2: client closing, server closing, rejected by transport
		return false
	}
	return true
}

// traceWrites returns ctx with an HTTP trace that notes in s when a
// request was written in full.
func traceWrites(ctx context.Context, s *sink) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				s.mu.Lock()
				s.written = true
				s.mu.Unlock()
			}
		},
	})
}
