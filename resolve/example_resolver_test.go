package resolve_test

import (
	"context"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight"
	"github.com/preflightmcp/preflight/hints"
	"github.com/preflightmcp/preflight/resolve"
)

// A function resolver reads the call's arguments and what is known of the
// caller (its session, capabilities and verified token), never a
// connection it could send requests on.
func ExampleResolverFunc() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "repos", Version: "v1"}, nil)
	rs := resolve.NewServer(server, nil)
	readRepo := resolve.ResolverFunc(func(_ context.Context, call *resolve.Call) (resolve.Resolution, error) {
		r := resolve.Resolution{Annotations: preflight.Annotations{ReadOnlyHint: true, IdempotentHint: true}}
		r.Hints.Effect = hints.EffectRead
		r.Hints.ResultSensitivity = hints.SensitivityConfidential
		repo, _ := call.Arguments["repo"].(string)
		if strings.HasPrefix(repo, "public/") {
			r.Hints.ResultSensitivity = hints.SensitivityPublic
		}
		// A verified token's scopes (HTTP with auth.RequireBearerToken)
		// say what the caller may read.
		if t := call.Caller.TokenInfo; t != nil && !slices.Contains(t.Scopes, "repo") {
			r.SecuritySchemes = []preflight.SecurityScheme{{Type: "oauth2", Scopes: []string{"repo"}}}
		}
		return r, nil
	})
	resolve.AddTool(rs, &mcp.Tool{
		Name:        "read_repo",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		Meta:        hints.Hints{Effect: hints.EffectRead, ResultSensitivity: hints.SensitivityConfidential}.Write(nil),
		InputSchema: map[string]any{"type": "object", "required": []any{"repo"},
			"properties": map[string]any{"repo": map[string]any{"type": "string"}}},
	}, func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}, readRepo)

	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := resolve.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, repo := range []string{"public/docs", "acme/payroll"} {
		d, err := resolve.Preflight(ctx, cs, list.Tools[0], map[string]any{"repo": repo}, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(repo, d.Effective.ResultSensitivity.Value)
	}
	// Output:
	// public/docs public
	// acme/payroll confidential
}
