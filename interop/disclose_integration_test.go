//go:build integration

package interop

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"go.uber.org/goleak"

	"github.com/preflightmcp/preflight/disclose"
	"github.com/preflightmcp/preflight/endpoint"
	"github.com/preflightmcp/preflight/examples/files/filetool"
)

// The real TypeScript SDK v2 client against examples/files with
// progressive disclosure (seed 004): it sees the minimal listing, is
// refused a call with TOOL_DESCRIPTION_REQUIRED, fetches the description
// with resources/read, and then calls successfully; a second legacy
// session, or a second principal under 2026-07-28, is still refused.

var discloseURI = disclose.SelectionURI(disclose.DefaultURI, filetool.Name)

// disclosePlan is the main path of one client.
func disclosePlan(tr Transport, era string) Plan {
	return Plan{Transport: tr, Era: era, Steps: []Step{
		List(),                        // 0: minimal listing
		Call(filetool.Name, readArgs), // 1: refused
		Request("resources/read", map[string]any{"uri": disclose.DefaultURI}), // 2: MISSING_TOOL_SELECTION
		Request("resources/read", map[string]any{"uri": discloseURI}),         // 3: the description
		Call(filetool.Name, readArgs),                                         // 4: allowed
		Request("resources/list", nil),                                        // 5: the resource is listed
	}}
}

// refusedPlan is a client that only calls.
func refusedPlan(tr Transport, era string) Plan {
	return Plan{Transport: tr, Era: era, Steps: []Step{Call(filetool.Name, readArgs)}}
}

// descriptionRequired reports whether a call step was refused with
// TOOL_DESCRIPTION_REQUIRED, as the client sees it: a tool result with
// isError and structuredContent.error.
func descriptionRequired(t *testing.T, r StepResult) bool {
	t.Helper()
	if !r.OK {
		t.Fatalf("call failed with a JSON-RPC error, want a tool error: %v", r.Error)
	}
	res := r.Map()
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	if res["isError"] != true || e == nil {
		return false
	}
	return e["code"] == disclose.CodeToolDescriptionRequired && e["resource_uri"] == discloseURI
}

func checkDisclose(t *testing.T, rep Report) {
	t.Helper()
	// 0: the minimal listing, as the typed listTools keeps it.
	tools := rep.Results[0].Map()["tools"].([]any)
	tl := tools[0].(map[string]any)
	if tl["description"] != "Read, append, replace, or delete file contents" ||
		!reflect.DeepEqual(tl["inputSchema"], map[string]any{"type": "object"}) {
		t.Errorf("listed %v", tl)
	}
	// 1: refused.
	if !descriptionRequired(t, rep.Results[1]) {
		t.Errorf("call before the fetch: %s", rep.Results[1].Result)
	}
	// 2: a read without tools is a JSON-RPC error whose data the client
	// keeps.
	if r := rep.Results[2]; r.OK || r.Error.Code != disclose.RPCInvalidParams {
		t.Errorf("read without tools: %+v", r)
	} else if data, _ := r.Error.Data.(map[string]any); data["code"] != disclose.CodeMissingToolSelection || data["examples"] == nil {
		t.Errorf("read without tools: data %v", r.Error.Data)
	}
	// 3: the full description.
	if r := rep.Results[3]; !r.OK {
		t.Fatalf("read: %v", r.Error)
	}
	contents := rep.Results[3].Map()["contents"].([]any)
	c := contents[0].(map[string]any)
	if c["mimeType"] != "application/json" || c["uri"] != discloseURI {
		t.Errorf("read: %v", c)
	}
	// 4: allowed now.
	if r := rep.Results[4]; !r.OK || r.Map()["isError"] == true {
		t.Fatalf("call after the fetch: %+v %s", r.Error, r.Result)
	}
	if got := rep.Results[4].Map()["content"].([]any)[0].(map[string]any)["text"]; got != "hello" {
		t.Errorf("call after the fetch returned %v", got)
	}
	// 5: the resource, with its workflow description.
	found := false
	for _, r := range rep.Results[5].Map()["resources"].([]any) {
		if m := r.(map[string]any); m["uri"] == disclose.DefaultURI && m["name"] == disclose.ResourceName {
			found = true
		}
	}
	if !found {
		t.Errorf("resources/list: %s", rep.Results[5].Result)
	}
}

// withTokens authenticates ?token=NAME as principal NAME through the SDK's
// bearer-token middleware; other requests are anonymous.
func withTokens(h http.Handler) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	authed := auth.RequireBearerToken(verify, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.URL.Query().Get("token"); tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
			authed.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestDiscloseHTTP(t *testing.T) {
	for _, era := range filesEras {
		t.Run(era.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			root, err := os.OpenRoot(filesRoot(t))
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			server, _ := filetool.NewDisclosingServer(root, nil, nil)
			hs := httptest.NewServer(withTokens(endpoint.NewHandler(server, nil)))
			defer hs.Close()
			// Legacy clients are told apart by session, 2026-07-28 ones by
			// principal.
			alice, bob := hs.URL+"?token=alice", hs.URL+"?token=bob"
			rep := RunTS(t, disclosePlan(Transport{HTTP: alice}, era.plan))
			if rep.ProtocolVersion != era.version {
				t.Errorf("negotiated %q, want %q", rep.ProtocolVersion, era.version)
			}
			checkDisclose(t, rep)
			if !descriptionRequired(t, RunTS(t, refusedPlan(Transport{HTTP: bob}, era.plan)).Results[0]) {
				t.Error("a second principal was not refused")
			}
			again := RunTS(t, refusedPlan(Transport{HTTP: alice}, era.plan)).Results[0]
			if era.version == "2025-11-25" {
				if !descriptionRequired(t, again) {
					t.Error("a second legacy session of the same user was not refused")
				}
			} else if descriptionRequired(t, again) {
				t.Error("the same principal, on a new client, was refused")
			}
		})
	}
}

// TestDiscloseStdio: the -disclose flag of examples/files, over stdio.
func TestDiscloseStdio(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "files")
	build := exec.Command("go", "build", "-o", bin, "../examples/files")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/files: %v\n%s", err, out)
	}
	for _, era := range filesEras {
		t.Run(era.name, func(t *testing.T) {
			dir := filesRoot(t)
			tr := Transport{Stdio: &Stdio{Command: bin, Args: []string{"-root", dir, "-disclose"}}}
			checkDisclose(t, RunTS(t, disclosePlan(tr, era.plan)))
			if !descriptionRequired(t, RunTS(t, refusedPlan(tr, era.plan)).Results[0]) {
				t.Error("a second connection was not refused")
			}
		})
	}
}
