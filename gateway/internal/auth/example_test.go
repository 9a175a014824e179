package auth_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
)

// A gateway with one static token: the token makes the request alice's,
// anything else gets a 401 and a challenge.
func ExampleAuthenticator_Middleware() {
	token, entry, err := auth.NewToken("alice")
	if err != nil {
		panic(err)
	}
	a, err := auth.New(&auth.Options{Tokens: []auth.Token{entry}})
	if err != nil {
		panic(err)
	}
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		fmt.Fprintf(w, "hello %s (%s); Authorization passed on: %q", p, p.Method, r.Header.Get("Authorization"))
	})
	mux := http.NewServeMux()
	a.Handle(mux) // protected-resource metadata, with OAuth only
	mux.Handle("/mcp", a.Middleware(mcpHandler))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, header := range []string{"Bearer " + token, "Bearer pft_guess", ""} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			fmt.Println(resp.StatusCode, string(body))
		} else {
			fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// Output:
	// 200 hello alice (token); Authorization passed on: ""
	// 401 Bearer realm="preflight", error="invalid_token", error_description="unknown token"
	// 401 Bearer realm="preflight"
}

// An MCP tool handler reads who is calling from its request.
func ExampleFromRequest() {
	server := mcp.NewServer(&mcp.Implementation{Name: "gateway", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p, ok := auth.FromRequest(ctx, req)
		if !ok {
			return nil, nil, fmt.Errorf("the MCP endpoint is not behind auth.Middleware")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.String()}}}, nil, nil
	})

	// Over a connection that is not HTTP, such as stdio, the caller is
	// the user who started the gateway: anonymous.
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// anonymous
}

// Requests to an upstream never carry a client's credentials, only the
// upstream's own from the config.
func ExampleUpstreamTransport() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("upstream got Authorization %q, Cookie %q\n", r.Header.Get("Authorization"), r.Header.Get("Cookie"))
	}))
	defer upstream.Close()
	client := &http.Client{Transport: auth.UpstreamTransport(nil, nil, "upstream-token")}

	req, _ := http.NewRequest(http.MethodPost, upstream.URL, nil)
	req.Header.Set("Authorization", "Bearer the-clients-token") // copied by mistake
	req.Header.Set("Cookie", "session=the-clients")
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	// Output:
	// upstream got Authorization "Bearer upstream-token", Cookie ""
}
