package gateway_test

import (
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/call"
	"github.com/preflightmcp/preflight/gateway/internal/stage"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// logsNeedAPerson confirms out of band every manage_files call on a path
// under logs/.
var logsNeedAPerson = stage.DecisionRule{Name: "logs-need-a-person", Tools: []string{"manage_files"},
	When: `args.path.startsWith("logs/")`, Verdict: call.Confirm, OutOfBand: true, Reason: "changes under logs/ need a person"}

// argsRE reads the page's arguments of a request: name, then value.
var argsRE = regexp.MustCompile(`<dt>([^<]*)</dt><dd>(?:<div class="value">)?([^<]*)`)

// TestApprovalPageShowsWhatRuns: a client that cannot be asked calls a
// delete whose path starts under logs/ but, past 60 "x/..", names
// important.txt. The page shows that path first and whole (never cut),
// and approving it then retrying deletes important.txt and nothing else.
// A call whose arguments are beyond what the page shows whole is told it
// cannot be approved there: no request, the upstream untouched. A value
// that looks like a secret is shown as [REDACTED:github-pat]. Both eras.
func TestApprovalPageShowsWhatRuns(t *testing.T) {
	const pat = "ghp_R8f3kQ2mZx7LpV9nTb4WcY1sHj6DgE0aUoKi"
	sneaky := "logs/old/" + strings.Repeat("x/../", 60) + "../../important.txt"
	for _, era := range []string{modern, legacy} {
		t.Run(era, func(t *testing.T) {
			ag := newApprovalGateway(t, approvalSetup{decisions: true, rules: []stage.DecisionRule{logsNeedAPerson}})
			for name, content := range map[string]string{"important.txt": "keep me\n", "logs/old/a.log": "old\n"} {
				p := filepath.Join(ag.up.dir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			peer := wiretest.Stateless(ag.url, nil)
			if era == legacy {
				peer = wiretest.Legacy(ag.url, nil)
				defer peer.Close()
			}
			pc := newPageClient(t, ag.base)
			link, err := ag.login.NewLink(ag.g.PageURL())
			if err != nil {
				t.Fatal(err)
			}
			csrf := pc.signIn(link)
			shown := func(id string) [][]string {
				t.Helper()
				st, body := pc.do(http.MethodGet, "/ui/approvals/"+id, nil)
				if st != http.StatusOK {
					t.Fatalf("the request's page: %d %s", st, body)
				}
				if strings.Contains(body, "(cut)") || strings.Contains(body, pat) {
					t.Errorf("the page cuts an argument or shows the token in clear:\n%s", body)
				}
				var args [][]string
				for _, m := range argsRE.FindAllStringSubmatch(body, -1) {
					args = append(args, []string{html.UnescapeString(m[1]), html.UnescapeString(m[2])})
				}
				return args
			}

			del := map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "delete", "path": sneaky}}
			id := pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", del)))
			if ag.up.toolCalls() != 0 {
				t.Fatal("the upstream was called before anyone approved")
			}
			args := shown(id)
			if len(args) != 2 || args[0][0] != "path" || args[0][1] != sneaky || args[1][0] != "action" || args[1][1] != "delete" {
				t.Fatalf("the page shows %q, want path first and whole (%d bytes), then action", args, len(sneaky))
			}
			if st, body := pc.do(http.MethodPost, "/ui/approvals/"+id+"/approve", url.Values{"csrf": {csrf}}); st != http.StatusSeeOther {
				t.Fatalf("approve on the page: %d %s", st, body)
			}
			ran := peer.Call(t, "tools/call", del)
			if ran.Error != nil || ran.Result["isError"] == true || !strings.Contains(wiretest.MustJSON(ran.Result), "deleted: important.txt") {
				t.Fatalf("the approved retry: %s", ran.Raw)
			}
			if ag.up.exists("important.txt") || !ag.up.exists("logs/old/a.log") || !ag.up.exists("notes.txt") || ag.up.toolCalls() != 1 {
				t.Fatalf("after the approved retry: important.txt there %v, logs/old/a.log %v, notes.txt %v, upstream calls %d",
					ag.up.exists("important.txt"), ag.up.exists("logs/old/a.log"), ag.up.exists("notes.txt"), ag.up.toolCalls())
			}

			// Beyond the bound: not approvable on the page.
			big := map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "replace", "path": "logs/old/a.log",
				"content": strings.Repeat("a", approval.DefaultShowBytes)}}
			text := toolErrorText(t, peer.Call(t, "tools/call", big))
			if !strings.Contains(text, "cannot be approved on the approval page") || !strings.Contains(text, "The server was not called") || linkRE.MatchString(text) {
				t.Errorf("a call beyond what the page shows whole: %q", text)
			}
			if reqs, err := ag.approvals.List(t.Context(), "", 0); err != nil || len(reqs) != 1 {
				t.Errorf("requests after the call beyond the bound: %d (want the delete's alone), %v", len(reqs), err)
			}
			if ag.up.toolCalls() != 1 {
				t.Errorf("the upstream was called for a call nobody could approve: %d calls", ag.up.toolCalls())
			}

			// A secret in content is shown redacted.
			secret := map[string]any{"name": "manage_files", "arguments": map[string]any{"action": "replace", "path": "logs/token.txt",
				"content": "GITHUB_TOKEN=" + pat + "\n"}}
			id = pendingLink(t, toolErrorText(t, peer.Call(t, "tools/call", secret)))
			args = shown(id)
			if len(args) != 3 || args[0][0] != "path" || args[2][0] != "content" || !strings.Contains(args[2][1], "[REDACTED:github-pat]") {
				t.Errorf("the page shows %q, want content with [REDACTED:github-pat]", args)
			}
			if st, body := pc.do(http.MethodGet, "/ui/", nil); st != http.StatusOK || strings.Contains(body, pat) || !strings.Contains(body, "[REDACTED:github-pat]") {
				t.Errorf("the pending list (%d) shows the token in clear or not redacted", st)
			}
		})
	}
}
