package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

const lookupDescription = "Looks up a word. It searches the whole dictionary, including archaic senses, and returns every definition with its etymology."

// lookupServer is an upstream with one tool whose description and schema
// are long enough for the minimal listing to differ.
func lookupServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "words"}, nil)
	s.AddTool(&mcp.Tool{Name: "lookup", Description: lookupDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"the word"}},"required":["q"]}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	return s
}

// principalURL serves the gateway's MCP handler on its own address, every
// request authenticated as user (a bearer token whose TokenInfo.UserID is
// user), as an auth middleware in front of the gateway would.
func principalURL(t *testing.T, g *gateway.Gateway, user string) string {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(g.Handler())
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+user)
		h.ServeHTTP(w, r)
	}))
}

// TestDisclosure: with disclosure on for one upstream, in both eras,
// tools/list is minimal for its tool and full for the other upstream's; a
// call before reading tool_descriptions?tools=NAME is refused with
// TOOL_DESCRIPTION_REQUIRED (for 2026-07-28, on what would be the
// passthrough path); after the read it runs; and another principal or
// legacy session is still refused, while the other upstream's tool needs
// no read.
func TestDisclosure(t *testing.T) {
	g, err := gateway.New(&gateway.Options{
		Logger: testLogger(t),
		Upstreams: []gateway.UpstreamSpec{
			{Name: "docs", URL: serveEra(t, lookupServer(), modern)},
			{Name: "plain", URL: serveEra(t, lookupServer(), modern)},
		},
		Disclosure: &gateway.Disclosure{Servers: []string{"docs"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	t.Cleanup(func() { g.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if err := g.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	peers := map[string][2]*wiretest.Peer{
		modern: {wiretest.Stateless(principalURL(t, g, "alice"), nil), wiretest.Stateless(principalURL(t, g, "bob"), nil)},
	}
	plainURL := serveHTTP(t, g.Handler())
	peers[legacy] = [2]*wiretest.Peer{wiretest.Legacy(plainURL, nil), wiretest.Legacy(plainURL, nil)}
	args := map[string]any{"q": "word"}

	for _, version := range []string{modern, legacy} {
		first, other := peers[version][0], peers[version][1]

		r := first.Call(t, "tools/list", nil)
		tools, _ := r.Result["tools"].([]any)
		byName := map[string]map[string]any{}
		for _, x := range tools {
			tl := x.(map[string]any)
			byName[tl["name"].(string)] = tl
		}
		if d := byName["docs__lookup"]; d == nil || d["description"] != "Looks up a word." || js(d["inputSchema"]) != `{"type":"object"}` {
			t.Errorf("%s: disclosed tool not minimal: %s", version, r.Raw)
		}
		if p := byName["plain__lookup"]; p == nil || p["description"] != lookupDescription || !strings.Contains(js(p["inputSchema"]), `"required"`) {
			t.Errorf("%s: other tool not listed in full: %s", version, r.Raw)
		}
		r = first.Call(t, "resources/list", nil)
		if !strings.Contains(string(r.Raw), `"uri":"`+disclose.DefaultURI+`"`) {
			t.Errorf("%s: resources/list lacks tool_descriptions: %s", version, r.Raw)
		}

		refused := func(p *wiretest.Peer, who string) {
			t.Helper()
			r := p.Call(t, "tools/call", map[string]any{"name": "docs__lookup", "arguments": args})
			sc, _ := r.Result["structuredContent"].(map[string]any)
			e, _ := sc["error"].(map[string]any)
			if r.Result["isError"] != true || e["code"] != disclose.CodeToolDescriptionRequired || e["tool"] != "docs__lookup" ||
				e["resource_uri"] != disclose.SelectionURI(disclose.DefaultURI, "docs__lookup") {
				t.Errorf("%s %s: call before the read not refused: %s", version, who, r.Raw)
			}
		}
		runs := func(p *wiretest.Peer, name, who string) {
			t.Helper()
			r := p.Call(t, "tools/call", map[string]any{"name": name, "arguments": args})
			if r.Error != nil || r.Result["isError"] == true || !strings.Contains(string(r.Raw), "found") {
				t.Errorf("%s %s: call of %s did not run: %s", version, who, name, r.Raw)
			}
		}
		refused(first, "first")
		runs(first, "plain__lookup", "first")

		r = first.Call(t, "resources/read", map[string]any{"uri": disclose.SelectionURI(disclose.DefaultURI, "docs__lookup")})
		contents, _ := r.Result["contents"].([]any)
		if r.Error != nil || len(contents) != 1 {
			t.Fatalf("%s: read of the description: %s", version, r.Raw)
		}
		text, _ := contents[0].(map[string]any)["text"].(string)
		var full map[string]map[string]any
		if err := json.Unmarshal([]byte(text), &full); err != nil || full["docs__lookup"]["description"] != lookupDescription ||
			!strings.Contains(js(full["docs__lookup"]["inputSchema"]), `"required"`) {
			t.Errorf("%s: full definition: %s", version, text)
		}
		if _, ok := full["plain__lookup"]; ok {
			t.Errorf("%s: an undisclosed tool in the descriptions: %s", version, text)
		}

		runs(first, "docs__lookup", "first after the read")
		refused(other, "other")
		runs(other, "plain__lookup", "other")
	}
	for _, ps := range peers {
		ps[0].Close()
		ps[1].Close()
	}
}

// TestOptionsFromConfigDisclosure: disclosure.enabled turns disclosure on
// for every server but those that set disclose: false, with the TTL.
func TestOptionsFromConfigDisclosure(t *testing.T) {
	yaml := "servers:\n  a: {command: x}\n  b: {command: y, disclose: false}\n  c: {command: z}\ndisclosure: {enabled: true, ttl: 2h}\n"
	cfg, err := config.Parse("test.yaml", []byte(yaml), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := setup.Options(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := opts.Disclosure
	if d == nil || strings.Join(d.Servers, ",") != "a,c" || d.Options.TTL != 2*time.Hour || d.Options.Store != nil {
		t.Fatalf("disclosure %+v", d)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	g.Close() // closes the pin store

	cfg, err = config.Parse("test.yaml", []byte("servers:\n  a: {command: x, disclose: true}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = setup.Options(context.Background(), cfg, nil); err != nil || opts.Disclosure == nil || strings.Join(opts.Disclosure.Servers, ",") != "a" {
		t.Fatalf("servers.a.disclose alone: %v, %+v", err, opts)
	}
	if g, err = gateway.New(opts); err != nil {
		t.Fatal(err)
	}
	g.Close()

	cfg, err = config.Parse("test.yaml", []byte("servers:\n  a: {command: x}\ndisclosure: {enabled: true, store: redis}\nredis: {url: \"redis://127.0.0.1:1\"}\napprovals: {store: memory, pageUrl: \"https://mcp.example.com/ui\"}\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if opts, err = setup.Options(context.Background(), cfg, nil); err != nil || opts.Disclosure == nil || opts.Disclosure.Options.Store == nil || opts.Disclosure.Close == nil {
		t.Fatalf("redis store: %v, %+v", err, opts)
	}
	if g, err = gateway.New(opts); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil { // closes the Redis client
		t.Fatal(err)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
