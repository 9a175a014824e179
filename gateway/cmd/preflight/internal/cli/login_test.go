package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/preflightmcp/preflight/gateway"
	"github.com/preflightmcp/preflight/internal/wiretest"
)

// TestApprovalSurvivesARestart: a delete waits for approval; the gateway
// restarts (as a desktop restarts its servers); "preflight login" prints a
// fresh link to the new page, where the request still waits; once
// approved there, the client's retry runs the delete.
func TestApprovalSurvivesARestart(t *testing.T) {
	t.Parallel()
	del := map[string]any{"name": "files__manage_files", "arguments": map[string]any{"path": "notes.txt", "action": "delete"}}
	url, data, _, stop := startServe(t)
	text := toolErrorText(t, wiretest.Stateless(url, nil).Call(t, "tools/call", del))
	m := regexp.MustCompile(`/ui/approvals/([A-Za-z0-9_-]+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the delete was not sent for approval: %q", text)
	}
	id := m[1]
	if code := stop(); code != exitOK {
		t.Fatalf("serve: exit %d", code)
	}

	url, _, _, _ = runServe(t, "-http", "127.0.0.1:0", "-data", data)
	base := strings.TrimSuffix(url, gateway.MCPPath)
	code, out, errOut := runMain(t, "login", "-data", data)
	lm := regexp.MustCompile(`(?m)^  (` + regexp.QuoteMeta(base) + `/ui/login\?token=(\S+))$`).FindStringSubmatch(out)
	if code != exitOK || lm == nil {
		t.Fatalf("login: exit %d, no link to %s:\n%s%s", code, base, out, errOut)
	}
	b := signedInBrowser(t, base, lm[2])
	page := b.get(base + "/ui/approvals/" + id)
	if !strings.Contains(page, `id="state"`) || !strings.Contains(page, "pending") {
		t.Fatalf("the request after the restart:\n%s", page)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token on the request's page")
	}
	if st := b.post(base+"/ui/approvals/"+id+"/approve", neturl.Values{"csrf": {csrf[1]}}); st != http.StatusSeeOther && st != http.StatusOK {
		t.Fatalf("approve: HTTP %d", st)
	}
	if r := wiretest.Stateless(url, nil).Call(t, "tools/call", del); r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("the retry after the approval: %s", r.Raw)
	}
	if _, err := os.Stat(filepath.Join(data, "files", "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the approved delete did not run: %v", err)
	}
	// The link signs in once.
	if st := signIn(newBrowser(), base, lm[2]); st == http.StatusSeeOther {
		t.Error("a login link signed in twice")
	}
}

// TestLoginWithoutAGateway: with no gateway running, login says so.
func TestLoginWithoutAGateway(t *testing.T) {
	t.Parallel()
	code, _, errOut := runMain(t, "login", "-data", t.TempDir())
	if code != exitCouldNotRun || !strings.Contains(errOut, "no gateway's approval page answers") {
		t.Errorf("login: exit %d: %s", code, errOut)
	}
}

// browser is an HTTP client with cookies that follows no redirect.
type browser struct {
	t *testing.T
	c *http.Client
}

func newBrowser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signIn posts a login token to the page at base and returns the status.
func signIn(c *http.Client, base, token string) int {
	return postForm(c, base, base+"/ui/login", neturl.Values{"token": {token}})
}

func postForm(c *http.Client, base, u string, form neturl.Values) int {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// signedInBrowser signs in to the page at base with token.
func signedInBrowser(t *testing.T, base, token string) *browser {
	t.Helper()
	b := &browser{t: t, c: newBrowser()}
	if st := signIn(b.c, base, token); st != http.StatusSeeOther {
		t.Fatalf("sign in: HTTP %d", st)
	}
	return b
}

func (b *browser) get(u string) string {
	b.t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("GET %s: HTTP %d\n%s", u, resp.StatusCode, body)
	}
	return string(body)
}

func (b *browser) post(u string, form neturl.Values) int {
	base := u[:strings.Index(u, "/ui/")]
	return postForm(b.c, base, u, form)
}

// TestLoginOnlyToTheGateway: a record of the page's address that points
// at another listener (a stopped gateway's port, taken by someone else)
// gets no link: the listener cannot prove it holds the gateway's key. A
// login key others could read is refused.
func TestLoginOnlyToTheGateway(t *testing.T) {
	t.Parallel()
	_, data, _, _ := startServe(t)
	var got []string
	squatter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.RequestURI())
		io.WriteString(w, "sign in here")
	}))
	defer squatter.Close()
	if err := os.WriteFile(filepath.Join(data, pageFile), []byte(squatter.URL+"/ui\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runMain(t, "login", "-data", data)
	if code != exitCouldNotRun || strings.Contains(out, squatter.URL) {
		t.Errorf("login with the page's record pointing elsewhere: exit %d\n%s%s", code, out, errOut)
	}
	for _, u := range got {
		if strings.Contains(u, "token") {
			t.Errorf("the listener got a token: %s", u)
		}
	}
	if err := os.Chmod(filepath.Join(data, loginKeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runMain(t, "login", "-data", data); code != exitCouldNotRun || !strings.Contains(errOut, "others may read or write it") {
		t.Errorf("login with a key others may read: exit %d %s", code, errOut)
	}
}

// TestLoginKeyMadeOnce: gateways starting together on one state
// directory share one whole key.
func TestLoginKeyMadeOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := make(chan []byte, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			k, err := loginKey(dir)
			if err != nil {
				t.Error(err)
			}
			keys <- k
		})
	}
	wg.Wait()
	close(keys)
	first := <-keys
	for k := range keys {
		if !bytes.Equal(k, first) || len(k) != keySize {
			t.Fatalf("two gateways got different keys: %x and %x", first, k)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
}

// toolErrorText returns the text of a tool error, failing unless r is one.
func toolErrorText(t *testing.T, r *wiretest.Response) string {
	t.Helper()
	if r.Error != nil || r.Result["isError"] != true {
		t.Fatalf("want a tool error, got %s", r.Raw)
	}
	var b strings.Builder
	content, _ := r.Result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}
