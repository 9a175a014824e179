package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/auth"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

// TestToken makes a token, puts the entry it prints in a config, and
// sends the token to a gateway with that config.
func TestToken(t *testing.T) {
	t.Parallel()
	code, out, errOut := runMain(t, "token", "-principal", "ci bot: nightly")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[2], auth.TokenPrefix) || !strings.HasPrefix(lines[4], "- {principal: ") {
		t.Fatalf("output:\n%s", out)
	}
	token, entry := lines[2], lines[4]

	yaml := "listen: {http: \"0.0.0.0:8080\"}\nservers: {s: {command: x}}\nauth:\n  tokens:\n    " + entry + "\n"
	c, err := config.Parse("gateway.yaml", []byte(yaml), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	if got := c.Auth.Tokens; len(got) != 1 || got[0].Principal != "ci bot: nightly" || got[0].SHA256 != auth.HashToken(token) {
		t.Fatalf("tokens %+v", got)
	}
	a, err := auth.New(setup.AuthOptions(c.Auth, ""))
	if err != nil {
		t.Fatal(err)
	}
	var principal string
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		principal = p.Name
	}))
	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 || principal != "ci bot: nightly" {
		t.Errorf("%d, principal %q", rec.Code, principal)
	}

	// Two runs make two tokens.
	_, out2, _ := runMain(t, "token", "-principal", "ci bot: nightly")
	if strings.Contains(out2, token) {
		t.Error("the same token twice")
	}
}

func TestTokenJSONAndEnv(t *testing.T) {
	code, out, _ := runMain(t, "token", "-principal", "alice", "-json")
	var doc struct{ Token, Principal, SHA256 string }
	if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil || doc.Principal != "alice" || doc.SHA256 != auth.HashToken(doc.Token) {
		t.Errorf("-json: exit %d %s", code, out)
	}

	t.Setenv("PREFLIGHT_TEST_TOKEN", "an-existing-random-token-0123456789")
	code, out, _ = runMain(t, "token", "-principal", "bob", "-env", "PREFLIGHT_TEST_TOKEN")
	if want := "- {principal: \"bob\", sha256: \"" + auth.HashToken("an-existing-random-token-0123456789") + "\"}\n"; code != exitOK || !strings.HasSuffix(out, want) || strings.Contains(out, "an-existing") {
		t.Errorf("-env: exit %d\n%s\nwant it to end with %s", code, out, want)
	}
	t.Setenv("PREFLIGHT_TEST_TOKEN", "short")
	if code, _, errOut := runMain(t, "token", "-principal", "bob", "-env", "PREFLIGHT_TEST_TOKEN"); code != exitFailure || !strings.Contains(errOut, "at least 32") {
		t.Errorf("short token: exit %d %s", code, errOut)
	}
	if code, _, errOut := runMain(t, "token", "-principal", "bob", "-env", "PREFLIGHT_TEST_UNSET_VARIABLE"); code != exitFailure || !strings.Contains(errOut, "is not set") {
		t.Errorf("unset variable: exit %d %s", code, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token"}, "-principal is required"},
		{[]string{"token", "-principal", "a", "catalog.json"}, "use preflight tokens"},
		{[]string{"token", "-principal", "a\tb"}, "control characters"},
	} {
		if code, out, errOut := runMain(t, tc.args...); code != exitUsage || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, out, errOut)
		}
	}
}
