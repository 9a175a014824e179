package pack

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/rules"
)

// FuzzParse feeds arbitrary pack files to the parser and the compiler:
// never a panic.
func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		b, err := os.ReadFile(n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("pack: x\nsource: s\ntools:\n  - tool: t\n    rules:\n      - {name: r, why: w, when: 'args.a == 1', hints: {effect: read}}\n"))
	f.Add([]byte("pack: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		_, _ = rules.Compile(rules.Config{Servers: map[string]rules.Server{"up": {Pack: p.Rules()}}})
	})
}

// FuzzPackArguments sends untrusted arguments to every tool of the GitHub
// catalog with the whole GitHub pack loaded: never a panic, the only error
// is ErrInvalidArguments, and a call whose method or action deletes is
// never left unconfirmed.
func FuzzPackArguments(f *testing.F) {
	tools := readCatalog(f, "github-all.json", "")
	r := compileFor(f, "github", tools)
	for i, s := range []string{
		`{"method":"delete","owner":"o","repo":"r"}`, `{"method":"create"}`, `{"action":"delete"}`,
		`{"method":"create","event":"APPROVE"}`, `{"path":".github/x","files":[{"path":".github/y"}]}`,
		`{"files":[{"path":1},{}]}`, `{"public":"yes"}`, `{"method":null}`, `[]`, ``,
	} {
		f.Add(uint8(i*7), []byte(s))
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tool := tools[int(which)%len(tools)]
		res, err := r.Resolve(t.Context(), rules.Call{Server: "up", Tool: tool, Arguments: raw}, nil)
		if err != nil {
			if !errors.Is(err, rules.ErrInvalidArguments) {
				t.Fatalf("%s %q: %v", tool.Name, raw, err)
			}
			return
		}
		var args map[string]any
		if json.Unmarshal(raw, &args) != nil {
			return
		}
		props, _ := schemaMap(t, tool)["properties"].(map[string]any)
		for _, k := range []string{"method", "action"} {
			if _, ok := props[k]; !ok {
				continue
			}
			if v, _ := args[k].(string); nameSaysDestructive.MatchString(v) && !res.NeedsConfirmation() && staticDecision(tool) {
				t.Fatalf("%s %s: resolved without confirmation by %q", tool.Name, raw, res.Rule)
			}
		}
	})
}
