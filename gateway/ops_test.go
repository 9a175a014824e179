package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/conformance/fixture"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/internal/upstream"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// notesServer has one prompt, one resource, one template and completions.
func notesServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, &mcp.ServerOptions{
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.Type + ":" + req.Params.Ref.Name + req.Params.Ref.URI}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddTool(&mcp.Tool{Name: "touch", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "mem://note"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greeting", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://note", Name: "note", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a note"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://notes/{id}", Name: "notes"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "note " + strings.TrimPrefix(req.Params.URI, "mem://notes/")}}}, nil
	})
	return s
}

// TestPromptsAndResources aggregates the prompts, resources and templates
// of two upstreams: prompts prefixed, URIs unchanged and routed (templates
// too), completions routed by their reference, in both eras.
func TestPromptsAndResources(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "fixture", URL: serveEra(t, fixture.NewServer(nil), modern)},
		{Name: "notes", URL: serveEra(t, notesServer(), legacy)},
	}})
	for _, era := range []string{modern, legacy} {
		cs := connect(t, url, era, nil, nil)
		ctx := context.Background()
		var prompts []string
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			prompts = append(prompts, p.Name)
		}
		if !slices.Contains(prompts, "fixture__test_simple_prompt") || !slices.Contains(prompts, "notes__greeting") {
			t.Errorf("%s prompts = %v", era, prompts)
		}
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "notes__greeting", Arguments: map[string]string{"who": era}})
		if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, "+era {
			t.Errorf("%s prompts/get: %v %v", era, pr, err)
		}
		var uris []string
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			uris = append(uris, r.URI)
		}
		if !slices.Contains(uris, "test://static-text") || !slices.Contains(uris, "mem://note") {
			t.Errorf("%s resources = %v", era, uris)
		}
		var tmpls []string
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			tmpls = append(tmpls, r.URITemplate)
		}
		if !slices.Contains(tmpls, "mem://notes/{id}") || !slices.Contains(tmpls, "test://template/{id}/data") {
			t.Errorf("%s templates = %v", era, tmpls)
		}
		for uri, want := range map[string]string{"mem://note": "a note", "mem://notes/42": "note 42"} {
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || rr.Contents[0].Text != want {
				t.Errorf("%s read %s: %v %v", era, uri, rr, err)
			}
		}
		if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"}); err != nil || rr.Contents[0].Text == "" {
			t.Errorf("%s read test://static-text: %v %v", era, rr, err)
		}
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nowhere://x"}); err == nil {
			t.Errorf("%s read of an unknown URI succeeded", era)
		}
		for ref, want := range map[*mcp.CompleteReference]string{
			{Type: "ref/prompt", Name: "notes__greeting"}:   "ref/prompt:greeting",
			{Type: "ref/resource", URI: "mem://notes/{id}"}: "ref/resource:mem://notes/{id}",
		} {
			res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
			if err != nil || len(res.Completion.Values) != 1 || res.Completion.Values[0] != want {
				t.Errorf("%s complete %+v: %v %v", era, ref, res, err)
			}
		}
	}
}

// TestResourceUpdates subscribes clients of both eras to a resource of a
// legacy upstream through the gateway: the upstream's resources/updated
// reaches them.
func TestResourceUpdates(t *testing.T) {
	t.Parallel()
	_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "notes", URL: serveEra(t, notesServer(), legacy)},
		{Name: "files", URL: filesServer(t)},
	}})
	for _, era := range []string{modern, legacy} {
		updated := make(chan string, 10)
		cs := connect(t, url, era, nil, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
		ctx := context.Background()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "mem://note"}); err != nil {
			t.Fatalf("%s subscribe: %v", era, err)
		}
		// Under 2026-07-28 the subscription is a stream the client opens in
		// the background; touch until the update arrives.
		deadline := time.After(readyTimeout)
	wait:
		for {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes__touch", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("%s touch: %v", era, err)
			}
			select {
			case uri := <-updated:
				if uri != "mem://note" {
					t.Errorf("%s updated %q", era, uri)
				}
				break wait
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: no resources/updated", era)
			}
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "mem://note"}); err != nil {
			t.Errorf("%s unsubscribe: %v", era, err)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "nowhere://x"}); era == legacy && err == nil {
			t.Errorf("%s: subscribing to an unknown resource succeeded", era)
		}
		cs.Close()
	}
}

// hang accepts connections and never answers: an upstream that is down
// without saying so.
func hang(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
			close(done)
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestDeadUpstreamDoesNotBlock starts a gateway with an upstream that
// never answers beside a working one: the working one serves at once, the
// dead one is reported down in health, and nothing waits for it.
func TestDeadUpstreamDoesNotBlock(t *testing.T) {
	t.Parallel()
	g, err := gateway.New(&gateway.Options{Logger: testLogger(t), Upstreams: []gateway.UpstreamSpec{
		{Name: "dead", URL: hang(t), ConnectTimeout: 300 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond,
			Restart: upstream.Restart{Initial: time.Hour}},
		{Name: "files", URL: filesServer(t)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(func() { g.Close() })
	waitView(t, g, "the working upstream", func(n []string) bool { return has(n, "files__manage_files") })
	waitFor(t, g, "the dead upstream to fail", func() bool {
		for _, h := range g.Health().Upstreams {
			if h.Name == "dead" {
				return h.State == upstream.StateDown
			}
		}
		return false
	})
	h := g.Health()
	if h.Status != "degraded" || h.Tools != 1 {
		t.Errorf("health: %+v", h)
	}
	for _, u := range h.Upstreams {
		if u.Name == "dead" && u.LastError == "" {
			t.Errorf("no error reported for the dead upstream: %+v", u)
		}
	}
}

// TestLazyUpstream checks that a lazy upstream connects only when a client
// first lists, then serves.
func TestLazyUpstream(t *testing.T) {
	t.Parallel()
	g, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "files", URL: filesServer(t)},
		{Name: "lazy", URL: filesServer(t), Lazy: true},
	}})
	for _, h := range g.Health().Upstreams {
		if h.Name == "lazy" && h.State != upstream.StateIdle {
			t.Fatalf("the lazy upstream connected before it was needed: %+v", h)
		}
	}
	if g.Health().Status != "ok" {
		t.Errorf("an idle lazy upstream degrades health: %+v", g.Health())
	}
	p := wiretest.Stateless(url, nil)
	p.Call(t, "tools/list", nil)
	waitView(t, g, "the lazy upstream's tools", func(n []string) bool { return has(n, "lazy__manage_files") })
}

// blockingServer's tool "wait" blocks until released or cancelled, and
// reports both.
type blockingServer struct {
	entered   chan struct{}
	release   chan struct{}
	cancelled chan struct{}
}

func newBlocking() *blockingServer {
	return &blockingServer{entered: make(chan struct{}, 10), release: make(chan struct{}), cancelled: make(chan struct{}, 10)}
}

func (b *blockingServer) server() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "blocking", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b.entered <- struct{}{}
		select {
		case <-b.release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		case <-ctx.Done():
			b.cancelled <- struct{}{}
			return nil, ctx.Err()
		}
	})
	return s
}

// TestGracefulShutdown stops the gateway while a call is in flight: the
// call finishes with its result before Serve returns.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	g, err := gateway.New(&gateway.Options{Logger: testLogger(t), Upstreams: []gateway.UpstreamSpec{{Name: "blocking", URL: serveEra(t, b.server(), modern)}}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(sctx, ln) }()
	url := "http://" + ln.Addr().String() + gateway.MCPPath

	cs := connect(t, url, legacy, nil, nil)
	result := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		if err != nil {
			result <- err.Error()
			return
		}
		result <- contentText(t, res)
	}()
	<-b.entered
	stop()
	// Wait until the gateway is stopping, then let the call finish.
	waitFor(t, g, "the gateway to stop accepting", func() bool { return g.Health().Status == "stopping" })
	close(b.release)
	if got := <-result; got != "released" {
		t.Errorf("the call in flight ended with %q", got)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + gateway.HealthPath); err == nil {
		t.Error("still serving after shutdown")
	}
}

// TestCancellation cancels a call in flight: the upstream's handler sees
// its context cancelled, for clients of both eras. (A 2026-07-28 upstream
// learns it from the end of the request, which its server must propagate
// to the handler, as this one is told to.)
func TestCancellation(t *testing.T) {
	t.Parallel()
	for _, upEra := range []string{modern, legacy} {
		b := newBlocking()
		s := b.server()
		var up string
		if upEra == modern {
			up = serveHTTP(t, endpoint.NewHandler(s, &endpoint.Options{Stateless: &mcp.StreamableHTTPOptions{PropagateRequestCancellation: true}}))
		} else {
			up = serveEra(t, s, legacy)
		}
		_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "blocking", URL: up}}})
		for _, era := range []string{modern, legacy} {
			cs := connect(t, url, era, nil, nil)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
				errc <- err
			}()
			<-b.entered
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("upstream %s, client %s: call ended with %v", upEra, era, err)
			}
			select {
			case <-b.cancelled:
			case <-time.After(readyTimeout):
				t.Fatalf("upstream %s, client %s: the upstream never saw the cancellation", upEra, era)
			}
		}
	}
}

// TestStdioClient serves the gateway to one client over stdio, as a
// desktop client that starts it as a process would.
func TestStdioClient(t *testing.T) {
	t.Parallel()
	g, err := gateway.New(&gateway.Options{Logger: testLogger(t), Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: filesServer(t)}}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{modern, legacy} {
		toGateway, fromClient := io.Pipe()
		toClient, fromGateway := io.Pipe()
		sctx, stop := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- g.ServeStdio(sctx, toGateway, fromGateway) }()
		c := mcp.NewClient(&mcp.Implementation{Name: "desktop"}, nil)
		cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated %s, want %s", got, version)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "manage_files", Arguments: map[string]any{"path": "notes.txt", "action": "read"}})
		if err != nil || contentText(t, res) != "hello from the files upstream\n" {
			t.Errorf("%s over stdio: %v %v", version, res, err)
		}
		cs.Close()
		stop()
		<-served
	}
}

// TestHeadersAndBearerToken checks that an HTTP upstream gets its
// configured headers and the bearer token from the environment on every
// request, and that a missing variable is reported.
func TestHeadersAndBearerToken(t *testing.T) {
	t.Setenv("PREFLIGHT_TEST_TOKEN", "s3cret")
	h := endpoint.NewHandler(filesServerMCP(t), nil)
	var bad int
	url := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Team") != "blue" {
			bad++
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	_, gw := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
		{Name: "files", URL: url, Headers: map[string]string{"X-Team": "blue"}, BearerTokenEnv: "PREFLIGHT_TEST_TOKEN"},
	}})
	p := wiretest.Stateless(gw, nil)
	if r := p.Call(t, "tools/call", map[string]any{"name": "manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "read"}}); r.Error != nil {
		t.Errorf("call: %s", r.Raw)
	}
	if bad != 0 {
		t.Errorf("%d requests lacked the headers", bad)
	}

	g, err := gateway.New(&gateway.Options{Upstreams: []gateway.UpstreamSpec{{Name: "files", URL: url, BearerTokenEnv: "PREFLIGHT_TEST_UNSET"}}})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	defer g.Close()
	waitFor(t, g, "the connection to fail", func() bool { return g.Health().Upstreams[0].LastError != "" })
	if e := g.Health().Upstreams[0].LastError; !strings.Contains(e, "PREFLIGHT_TEST_UNSET is not set") {
		t.Errorf("error = %q", e)
	}
}

func filesServerMCP(t *testing.T) *mcp.Server {
	s := filetool.NewServer(filesDir(t), nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	return s
}
