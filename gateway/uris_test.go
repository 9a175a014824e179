package gateway_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway"
)

// uriServer is an upstream that lists uris and templates and answers a
// read with its name and the URI it was asked for; it counts the
// subscriptions it is asked for.
func uriServer(name string, subs *atomic.Int64, uris []string, templates ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { subs.Add(1); return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	for _, uri := range uris {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri}, ownerRead(name))
	}
	for _, tmpl := range templates {
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: tmpl, Name: tmpl}, ownerRead(name))
	}
	return s
}

func ownerRead(name string) mcp.ResourceHandler {
	return func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: name + " " + req.Params.URI}}}, nil
	}
}

// listedURIs returns the URIs of resources/list and the URI templates of
// resources/templates/list.
func listedURIs(t *testing.T, cs *mcp.ClientSession) (uris, templates []string) {
	t.Helper()
	ctx := context.Background()
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, r.URITemplate)
	}
	return uris, templates
}

// readText reads uri through cs and returns its text.
func readText(cs *mcp.ClientSession, uri string) (string, error) {
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(rr.Contents) != 1 {
		return "", errors.New("not one content")
	}
	return rr.Contents[0].Text, nil
}

// refusedAsAmbiguous reports whether err is a -32602 naming each form.
func refusedAsAmbiguous(err error, forms ...string) bool {
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		return false
	}
	for _, f := range forms {
		if !strings.Contains(je.Message, f) {
			return false
		}
	}
	return true
}

// TestResourceSubscriptionsPerUpstream has two upstreams list file:///x:
// a client subscribing to one's namespaced URI subscribes that upstream
// alone, and gets its resources/updated under the URI it subscribed to,
// in both eras.
func TestResourceSubscriptionsPerUpstream(t *testing.T) {
	t.Parallel()
	for _, era := range []string{modern, legacy} {
		var subsA, subsB atomic.Int64
		a := uriServer("a", &subsA, []string{"file:///x"})
		b := uriServer("b", &subsB, []string{"file:///x"})
		_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
			{Name: "a", URL: serveEra(t, a, era)},
			{Name: "b", URL: serveEra(t, b, era)},
		}})
		updated := make(chan string, 100)
		cs := connect(t, url, era, nil, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		}})
		ctx := context.Background()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "preflight:b/file:///x"}); err != nil {
			t.Fatalf("%s subscribe: %v", era, err)
		}
		waitUntil(t, func() bool { return subsB.Load() == 1 })
		// Under 2026-07-28 the client's stream opens in the background:
		// update until the notification arrives.
		deadline := time.After(readyTimeout)
	wait:
		for {
			if err := b.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "file:///x"}); err != nil {
				t.Fatal(err)
			}
			select {
			case uri := <-updated:
				if uri != "preflight:b/file:///x" {
					t.Errorf("%s: updated %q, want the URI subscribed to", era, uri)
				}
				break wait
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: no resources/updated", era)
			}
		}
		if n := subsA.Load(); n != 0 {
			t.Errorf("%s: the other upstream was asked for %d subscriptions", era, n)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///x"}); era == legacy && !refusedAsAmbiguous(err, "preflight:a/file:///x", "preflight:b/file:///x") {
			t.Errorf("%s: subscribe to a URI both serve: %v, want -32602 naming both forms", era, err)
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "preflight:b/file:///x"}); err != nil {
			t.Errorf("%s unsubscribe: %v", era, err)
		}
		cs.Close()
	}
}

// TestResourceListChangedRemapsURIs: a URI one upstream alone lists is
// served as it is; when another upstream starts listing it, both are
// listed under their namespaced forms and each reaches its owner; when
// the other stops, it is served as it is again. Both eras.
func TestResourceListChangedRemapsURIs(t *testing.T) {
	t.Parallel()
	for _, era := range []string{modern, legacy} {
		var subs atomic.Int64
		a := uriServer("a", &subs, []string{"file:///x"})
		b := uriServer("b", &subs, []string{"file:///y"})
		_, url := startGateway(t, &gateway.Options{Upstreams: []gateway.UpstreamSpec{
			{Name: "a", URL: serveEra(t, a, era)},
			{Name: "b", URL: serveEra(t, b, era)},
		}})
		cs := connect(t, url, era, nil, nil)
		listed := func(want ...string) func() bool {
			return func() bool {
				uris, _ := listedURIs(t, cs)
				slices.Sort(uris)
				return slices.Equal(uris, want)
			}
		}
		waitUntil(t, listed("file:///x", "file:///y"))
		if got, err := readText(cs, "file:///x"); err != nil || got != "a file:///x" {
			t.Errorf("%s: read of a's own URI = %q, %v", era, got, err)
		}

		b.AddResource(&mcp.Resource{URI: "file:///x", Name: "x"}, ownerRead("b"))
		waitUntil(t, listed("file:///y", "preflight:a/file:///x", "preflight:b/file:///x"))
		for uri, want := range map[string]string{"preflight:a/file:///x": "a file:///x", "preflight:b/file:///x": "b file:///x", "file:///y": "b file:///y"} {
			if got, err := readText(cs, uri); err != nil || got != want {
				t.Errorf("%s: read %q = %q, %v; want %q", era, uri, got, err, want)
			}
		}
		if got, err := readText(cs, "file:///x"); !refusedAsAmbiguous(err, "preflight:a/file:///x", "preflight:b/file:///x") {
			t.Errorf("%s: read of a URI both serve = %q, %v", era, got, err)
		}

		b.RemoveResources("file:///x")
		waitUntil(t, listed("file:///x", "file:///y"))
		if got, err := readText(cs, "file:///x"); err != nil || got != "a file:///x" {
			t.Errorf("%s: read after the other stopped listing it = %q, %v", era, got, err)
		}
		if got, err := readText(cs, "preflight:b/file:///x"); err == nil {
			t.Errorf("%s: b's namespace still reaches a URI b no longer serves: %q", era, got)
		}
		cs.Close()
	}
}
