package upstream

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bound is how long a test waits for something that must happen before it
// fails; it is a limit, never a synchronisation.
const bound = 30 * time.Second

// rig runs a Conn for one test and hears its changes.
type rig struct {
	t           *testing.T
	c           *Conn
	changed     chan struct{}
	listChanged chan ListKinds
}

// run starts a Conn for spec; the test's end stops it and waits for Run
// to return.
func run(t *testing.T, spec Spec, opts *Options) *rig {
	t.Helper()
	r := &rig{t: t, changed: make(chan struct{}, 1), listChanged: make(chan ListKinds, 16)}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.OnChange = func(*Conn) {
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	o.OnListChanged = func(_ *Conn, k ListKinds) {
		select {
		case r.listChanged <- k:
		default:
		}
	}
	c, err := New(spec, &o)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// waitFor waits until the Conn's health satisfies ok.
func (r *rig) waitFor(what string, ok func(Health) bool) Health {
	r.t.Helper()
	limit := time.NewTimer(bound)
	defer limit.Stop()
	for {
		h := r.c.Health()
		if ok(h) {
			return h
		}
		select {
		case <-r.changed:
		case <-limit.C:
			r.t.Fatalf("%s: not within %v; health %+v", what, bound, h)
		}
	}
}

// nextListChange returns the kinds of the next list change reported.
func (r *rig) nextListChange() ListKinds {
	r.t.Helper()
	select {
	case k := <-r.listChanged:
		return k
	case <-time.After(bound):
		r.t.Fatalf("no list change reported within %v", bound)
		return 0
	}
}

func (r *rig) up() Health {
	r.t.Helper()
	return r.waitFor("up", func(h Health) bool { return h.State == StateUp })
}

// call sends a tools/call and returns its first step.
func (r *rig) call(ctx context.Context, name string, args string) (*Step, error) {
	ex, err := r.c.Start(ctx, Request{Method: MethodCallTool, Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	return ex.Next(ctx)
}

// memServer serves s over in-memory transports, one session per
// connection attempt, and counts the attempts.
type memServer struct {
	s        *mcp.Server
	attempts atomic.Int32

	mu    sync.Mutex
	conns []mcp.Connection // the server's side of each connection
}

func (m *memServer) connect(ctx context.Context) (mcp.Transport, error) {
	m.attempts.Add(1)
	st, ct := mcp.NewInMemoryTransports()
	if _, err := m.s.Connect(context.Background(), &recordingTransport{Transport: st, m: m}, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// cut breaks the latest connection, as a crash or a network would: the
// server's side is closed without a goodbye.
func (m *memServer) cut() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.conns[len(m.conns)-1].Close()
}

// recordingTransport remembers the server's side of a connection.
type recordingTransport struct {
	mcp.Transport
	m *memServer
}

func (r *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err == nil {
		r.m.mu.Lock()
		r.m.conns = append(r.m.conns, c)
		r.m.mu.Unlock()
	}
	return c, err
}

var objectSchema = map[string]any{"type": "object"}

// newServer returns a server with the tool echo, which returns its
// arguments as text.
func newServer(opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return textResult(string(req.Params.Arguments)), nil
	})
	return s
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// resultText returns the text of a step's tool result.
func resultText(t *testing.T, step *Step) string {
	t.Helper()
	if step == nil || step.Result == nil {
		t.Fatalf("step %+v, want a result", step)
	}
	r, ok := step.Result.Typed.(*mcp.CallToolResult)
	if !ok || len(r.Content) != 1 {
		t.Fatalf("result %s, want one content block", step.Result.Raw)
	}
	return r.Content[0].(*mcp.TextContent).Text
}
