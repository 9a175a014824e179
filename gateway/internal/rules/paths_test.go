package rules

import "testing"

func TestCleanPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		".env":                    ".env",
		".env/":                   ".env",
		".env/.":                  ".env",
		"./.env":                  ".env",
		"dir/../.env":             ".env",
		"a//b/./.env/":            "a/b/.env",
		"/srv/app/x/../../.env":   "/srv/.env",
		"../.env":                 "../.env",
		`C:\Users\u\.\.aws\\cred`: "C:/Users/u/.aws/cred",
		`\\host\share\..\.env`:    "/host/.env",
		"":                        ".",
	} {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCleanPathInRules: a rule that matches cleanPath(args.path) matches
// every spelling the server opens as the same file; one given a value
// that is not a string fails, and the call resolves to static.
func TestCleanPathInRules(t *testing.T) {
	t.Parallel()
	r := compile(t, Server{Rules: []Rule{{
		Name: "env", Tools: []string{"manage_files"},
		When:  `cleanPath(args.path).matches(r"(^|/)\.env$")`,
		Hints: HintPatch{ResultSensitivity: "restricted"},
	}}})
	for _, p := range []string{".env", ".env/", ".env/.", "./.env", "dir/../.env", `dir\\..\\.env`} {
		res := mustResolve(t, r, call(filesTool(), `{"action":"read","path":"`+p+`"}`), nil)
		if res.Rule != "env" || res.Effective.ResultSensitivity.Value != "restricted" {
			t.Errorf("%s: rule %q, sensitivity %q", p, res.Rule, res.Effective.ResultSensitivity.Value)
		}
	}
	if res := mustResolve(t, r, call(filesTool(), `{"action":"read","path":".env/../notes"}`), nil); res.Rule != "" {
		t.Errorf(".env/../notes: rule %q", res.Rule)
	}
	res := mustResolve(t, r, Call{Server: "up", Tool: filesTool(), Args: map[string]any{"action": "read", "path": 1.0}, Arguments: []byte(`{}`)}, nil)
	if res.Layer != LayerStatic || res.Problem == nil {
		t.Errorf("a number for a path: %s %q, problem %v; want static with a problem", res.Layer, res.Rule, res.Problem)
	}
}

// TestCleanPathInConditions: decision conditions have cleanPath too.
func TestCleanPathInConditions(t *testing.T) {
	t.Parallel()
	c, err := CompileCondition(`cleanPath(args.path) == "logs"`, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Eval(Vars{Args: map[string]any{"path": "logs/old/../"}}); !ok || err != nil {
		t.Errorf("Eval = %v, %v; want true", ok, err)
	}
}
