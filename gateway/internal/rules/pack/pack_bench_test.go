package pack

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/gateway/internal/rules"
)

// BenchmarkResolve measures the per-call resolution of the gateway with
// the whole GitHub pack loaded (its 80 rules, checked against the 85 tools
// of github-all.json) and the filesystem pack, from the raw arguments a
// client sends: decoding, rule evaluation, the precomputed result.
//
//	go test -run '^$' -bench Resolve -benchmem -count 6 ./gateway/rules/pack/
func BenchmarkResolve(b *testing.B) {
	github := readCatalog(b, "github-all.json", "")
	gr := compileFor(b, "github", github)
	fs := readCatalog(b, "server-filesystem.json", "")
	fr := compileFor(b, "filesystem", fs)
	cases := []struct {
		name  string
		r     *rules.Rules
		tools []*mcp.Tool
		tool  string
		args  string
	}{
		{"github/no-rules", gr, github, "get_me", `{}`},
		{"github/issue_write=update", gr, github, "issue_write", `{"method":"update","owner":"octo","repo":"hello","issue_number":42,"state":"closed","state_reason":"completed"}`},
		{"github/review=approve", gr, github, "pull_request_review_write", `{"method":"create","owner":"octo","repo":"hello","pullNumber":7,"event":"APPROVE","body":"LGTM"}`},
		{"github/review=resolve_thread", gr, github, "pull_request_review_write", `{"method":"resolve_thread","owner":"octo","repo":"hello","pullNumber":7,"threadId":"PRRT_kwDOxxx"}`},
		{"github/projects_write=create_project", gr, github, "projects_write", `{"method":"create_project","owner":"octo","owner_type":"org","title":"Roadmap"}`},
		{"github/create_or_update_file", gr, github, "create_or_update_file", `{"owner":"octo","repo":"hello","branch":"main","path":"docs/guide/install.md","content":"# Install\n\nRun the installer.\n","message":"docs: install","sha":"3d21ec53a331a6f037a91c368710b99387d012c1"}`},
		{"github/push_files=3", gr, github, "push_files", `{"owner":"octo","repo":"hello","branch":"main","message":"m","files":[{"path":"a/b.go","content":"package b"},{"path":"a/c.go","content":"package c"},{"path":"README.md","content":"hi"}]}`},
		{"filesystem/read_text_file", fr, fs, "read_text_file", `{"path":"/home/user/project/src/main.go"}`},
		{"filesystem/edit_file=dryRun", fr, fs, "edit_file", `{"path":"/home/user/project/src/main.go","edits":[{"oldText":"a","newText":"b"}],"dryRun":true}`},
	}
	for _, c := range cases {
		tool := findTool(c.tools, c.tool)
		call := rules.Call{Server: "up", Tool: tool, Arguments: json.RawMessage(c.args), Principal: "user@example.com"}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.r.Resolve(b.Context(), call, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The same call with arguments the core has decoded already.
	tool := findTool(github, "issue_write")
	var args map[string]any
	if err := json.Unmarshal([]byte(cases[1].args), &args); err != nil {
		b.Fatal(err)
	}
	call := rules.Call{Server: "up", Tool: tool, Args: args, Principal: "user@example.com"}
	b.Run("github/issue_write=update/decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := gr.Resolve(b.Context(), call, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLoad measures compiling the GitHub pack and checking it
// against github-all.json: what a reload or a tools/list_changed costs.
func BenchmarkLoad(b *testing.B) {
	tools := readCatalog(b, "github-all.json", "")
	rs, err := Rules("github")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := rules.Compile(rules.Config{Servers: map[string]rules.Server{"up": {Pack: rs}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.SetTools("up", tools); err != nil {
			b.Fatal(err)
		}
	}
}
