package rules

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fuzzRules are rules of every kind the loader accepts, for the argument
// fuzzer: enum, boolean, optional, string functions, regular expressions,
// macros over lists and over the arguments themselves.
func fuzzRules() Server {
	return Server{Rules: []Rule{
		{Name: "forced", Tools: []string{"manage_files"}, When: `args.?force.orValue(false) == true && args.action == "delete"`, Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		{Name: "secret", Tools: []string{"manage_files"}, When: `args.path.matches(r"(^|[/\\])\.ssh[/\\]") || args.path.lowerAscii().endsWith(".pem")`, Hints: HintPatch{ResultSensitivity: "restricted"}},
		{Name: "count", Tools: []string{"manage_files"}, When: `has(args.count) && args.count > 3 && args.action == "append"`, Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		{Name: "keys", Tools: []string{"manage_files"}, When: `args.exists(k, k.startsWith("x-"))`, Hints: HintPatch{RequiresConfirmation: ptr(true)}},
		{Name: "read", Tools: []string{"manage_files"}, When: `args.action == "read"`, Annotations: readOnly, Hints: HintPatch{Effect: "read"}},
		{Name: "append", Tools: []string{"manage_files"}, When: `args.action == "append"`, Annotations: additive, Hints: HintPatch{Effect: "write"}},
	}}
}

// FuzzResolveArguments feeds untrusted arguments, as a client sends them,
// through decoding and every kind of rule. It must never panic; the only
// error is ErrInvalidArguments; and a delete is never resolved to a call
// that needs no confirmation.
func FuzzResolveArguments(f *testing.F) {
	for _, s := range []string{
		`{"action":"read","path":"a"}`, `{"action":"delete","path":"a","force":true}`, `{"action":"append","path":"~/.ssh/id","count":9}`,
		`{"action":"append","path":"a","count":"9"}`, `{"x-y":1}`, `{"action":["read"]}`, `{"path":null}`, `[]`, `null`, ``, `{`,
		`{"action":"read","path":"a","count":1e308}`, `{"action":"\u0000"}`, `{"a":{"b":{"c":[[[[[]]]]]}}}`,
	} {
		f.Add([]byte(s))
	}
	r, err := Compile(Config{Servers: map[string]Server{"up": fuzzRules()}})
	if err != nil {
		f.Fatal(err)
	}
	tool := filesTool()
	if err := r.SetTools("up", []*mcp.Tool{tool}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := r.Resolve(t.Context(), Call{Server: "up", Tool: tool, Arguments: raw}, nil)
		if err != nil {
			if !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		switch res.Layer {
		case LayerRule, LayerStatic:
		default:
			t.Fatalf("layer %q", res.Layer)
		}
		var args map[string]any
		if json.Unmarshal(raw, &args) == nil && args["action"] == "delete" && !res.NeedsConfirmation() {
			t.Fatalf("%s: a delete resolved without confirmation (rule %q)", raw, res.Rule)
		}
	})
}

// FuzzCompile feeds arbitrary rules to the loader: compiling, checking
// against a tool and resolving never panic, and every problem is an
// *Error that names the server.
func FuzzCompile(f *testing.F) {
	for _, s := range []struct{ when, tool, effect, sensitivity string }{
		{`args.action == "read"`, "manage_files", "read", ""},
		{`args.acton == "read"`, "manage_files", "", "public"},
		{`args.?force.orValue(false) == true`, "manage_files", "write", ""},
		{`args.path.matches("(")`, "manage_files", "", ""},
		{`args.count / 0 == 1`, "manage_files", "delete", "restricted"},
		{`[1,2,3].map(x, x * 2).size() > 2`, "", "external", ""},
		{`principal.size() > 0 && tool == "x"`, "", "", "internal"},
		{`args.action in ["read", 1, true, null]`, "manage_files", "", ""},
		{`"a" + 1`, "manage_files", "", ""},
	} {
		f.Add(s.when, s.tool, s.effect, s.sensitivity)
	}
	tool := filesTool()
	f.Fuzz(func(t *testing.T, when, toolName, effect, sensitivity string) {
		rule := Rule{Name: "r", When: when, Hints: HintPatch{Effect: effect, ResultSensitivity: sensitivity}, Annotations: additive}
		if toolName != "" {
			rule.Tools = []string{toolName}
		}
		r, err := Compile(Config{Servers: map[string]Server{"up": {Rules: []Rule{rule}}}})
		if err != nil {
			var re *Error
			if !errors.As(err, &re) || re.Server != "up" {
				t.Fatalf("compile error is not an *Error naming the server: %v", err)
			}
			return
		}
		if err := r.SetTools("up", []*mcp.Tool{tool}); err != nil {
			var re *Error
			// The tool checked, or the one the rule names and the upstream
			// does not list.
			if !errors.As(err, &re) || re.Rule != "r" || re.Tool != tool.Name && re.Tool != toolName {
				t.Fatalf("check error is not an *Error naming the rule and the tool: %v", err)
			}
		}
		for _, args := range []string{`{"action":"read","path":"a","force":true,"count":2}`, `{}`} {
			if _, err := r.Resolve(t.Context(), Call{Server: "up", Tool: tool, Arguments: json.RawMessage(args)}, nil); err != nil {
				t.Fatalf("%s: %v", args, err)
			}
		}
	})
}
