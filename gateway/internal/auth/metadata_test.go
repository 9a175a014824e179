package auth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestMetadata reads the protected-resource metadata on the wire, at the
// path-suffixed URL of RFC 9728 and at the root URL the MCP spec also
// allows, and checks what else is there.
func TestMetadata(t *testing.T) {
	t.Parallel()
	is, g := oauthGateway(t, OAuth{Scopes: []string{"mcp:tools"}}, key("rsa"))
	base := strings.TrimSuffix(g.resource, "/mcp")
	want := map[string]any{
		"resource":                 g.resource,
		"authorization_servers":    []any{is.srv.URL},
		"scopes_supported":         []any{"mcp:tools"},
		"bearer_methods_supported": []any{"header"},
	}
	for _, path := range []string{WellKnownPath + "/mcp", WellKnownPath} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: %d %v %v", path, resp.StatusCode, resp.Header, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v\nwant %v", path, got, want)
		}
	}
	for path, status := range map[string]int{
		WellKnownPath + "/other": 404,
		WellKnownPath + "/mcp/x": 404,
		WellKnownPath + "/":      404,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, status)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+WellKnownPath+"/mcp", nil)
	if r := do(t, req); r.status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", r.status)
	}
}

// TestMetadataURL checks where the metadata is for resources of each
// shape, and that without OAuth nothing is served.
func TestMetadataURL(t *testing.T) {
	t.Parallel()
	for resource, want := range map[string]string{
		"https://mcp.example.com/mcp":        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
		"https://mcp.example.com":            "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com/":           "https://mcp.example.com/.well-known/oauth-protected-resource",
		"https://mcp.example.com:8443/a/mcp": "https://mcp.example.com:8443/.well-known/oauth-protected-resource/a/mcp",
		"https://mcp.example.com/mcp/":       "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/",
	} {
		a, err := New(&Options{OAuth: &OAuth{Issuer: "https://auth.example.com", Resource: resource}})
		if err != nil {
			t.Fatal(err)
		}
		if got := a.MetadataURL(); got != want {
			t.Errorf("%s: %s, want %s", resource, got, want)
		}
	}

	c, _ := staticConfig(t, 1)
	a, err := New(&c)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	a.Handle(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, WellKnownPath, nil))
	if rec.Code != 404 || a.MetadataURL() != "" {
		t.Errorf("static tokens only: metadata served (%d) or named (%q)", rec.Code, a.MetadataURL())
	}
}
