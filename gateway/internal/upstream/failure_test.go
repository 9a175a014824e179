package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClassify: what the upstream answered stays as it is; a failure a
// later attempt may not meet becomes a TransientError of its kind, which
// says whether the request may have reached the upstream.
func TestClassify(t *testing.T) {
	t.Parallel()
	answer := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad path"}
	closing := fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: -32003, Message: "client is closing"})
	expired, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	for _, tc := range []struct {
		name      string
		transport string // "custom" for Spec.Connect
		sink      *sink
		ctx       context.Context
		err       error
		kind      string // "" means the error is returned unchanged
		sent      bool
	}{
		{"an answer", "custom", &sink{written: true, answered: true}, nil, answer, "", false},
		{"an answer's code", "custom", &sink{written: true}, nil, fmt.Errorf("calling: %w", answer), "", false},
		{"cancelled by the caller", "custom", &sink{written: true}, nil, context.Canceled, "", false},
		{"HTTP 5xx", TransportHTTP, &sink{status: 503}, nil, errors.New("503"), FailHTTP5xx, true},
		{"timeout", "custom", &sink{written: true}, nil, context.DeadlineExceeded, FailTimeout, true},
		{"timeout, then the answer to the cancellation", "custom", &sink{written: true, answered: true}, nil, context.DeadlineExceeded, FailTimeout, true},
		{"connection closed at the deadline", "custom", &sink{written: true}, expired, mcp.ErrConnectionClosed, FailTimeout, true},
		{"stdio server gone", TransportStdio, &sink{written: true}, nil, closing, FailExited, true},
		{"connection lost before writing", "custom", &sink{}, nil, closing, FailConnection, false},
		{"connection lost after writing", TransportHTTP, &sink{written: true}, nil, errors.New("EOF"), FailConnection, true},
	} {
		spec := Spec{Name: "up", Transport: tc.transport}
		switch tc.transport {
		case "custom":
			spec.Transport, spec.Connect = "", func(context.Context) (mcp.Transport, error) { return nil, errors.New("unused") }
		case TransportStdio:
			spec.Command = "server"
		default:
			spec.URL = "http://127.0.0.1:1/mcp"
		}
		c, err := New(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := tc.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		got := c.classify(ctx, nil, tc.sink, tc.err)
		var te *TransientError
		if tc.kind == "" {
			if got != tc.err {
				t.Errorf("%s: %v, want the error unchanged", tc.name, got)
			}
			continue
		}
		if !errors.As(got, &te) || te.Kind != tc.kind || te.Sent != tc.sent || te.Upstream != "up" || !errors.Is(got, tc.err) {
			t.Errorf("%s: %#v, want a %s failure, sent %v, wrapping %v", tc.name, got, tc.kind, tc.sent, tc.err)
		}
	}
}

// TestTransientErrorDetail: the cause an error message quotes, which
// reaches the client, is sanitised and clipped on a rune boundary.
func TestTransientErrorDetail(t *testing.T) {
	t.Parallel()
	err := &TransientError{Upstream: "files", Kind: FailConnection, Err: errors.New("\x1b[2J" + strings.Repeat("é", 150))}
	msg := err.Error()
	if !utf8.ValidString(msg) || strings.Contains(msg, "\x1b") || !strings.HasSuffix(msg, ": "+strings.Repeat("é", 100)+"…") {
		t.Errorf("message %q", msg)
	}
}
