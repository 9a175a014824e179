//go:build integration

package fleet_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/fleet"
)

// TestPageApproval signs in to one replica's approval page with the link
// it printed, approves there the request a legacy client waits on at the
// other replica, and checks that the call is released and runs once.
func TestPageApproval(t *testing.T) {
	f := fleet.Start(t, nil)
	files := filepath.Join(f.Dir, "data", "files")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	a, b := f.Replicas[0], f.Replicas[1]
	mkdirs(t, files, "page.txt")

	ids := make(chan string, 1)
	c := &fleet.Client{URL: b.URL, Version: fleet.Legacy,
		Capabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		OnRequest: func(method string, params json.RawMessage) any {
			var p struct{ Mode, ElicitationID string }
			if method != "elicitation/create" || json.Unmarshal(params, &p) != nil || p.Mode != "url" {
				return nil
			}
			ids <- p.ElicitationID
			return map[string]any{"action": "accept"}
		}}
	defer c.Close(ctx)
	done := make(chan *fleet.Response, 1)
	go func() {
		r, err := c.Call(ctx, "tools/call", map[string]any{"name": "files__manage_files", "arguments": map[string]any{"action": "append", "path": "page.txt", "content": "+page"}})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var id string
	select {
	case id = <-ids:
	case r := <-done:
		t.Fatalf("the call ended without asking for approval: %+v", r)
	case <-ctx.Done():
		t.Fatal("no URL elicitation within the bound")
	}

	// Replica A's page, signed in as a browser would with A's link.
	link, token, err := a.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	base := link[:strings.Index(link, "/ui/login")]
	if !strings.HasPrefix(a.URL, base+"/") {
		t.Fatalf("%s printed a link to %s", a.Name, base)
	}
	jar, _ := cookiejar.New(nil)
	h := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u string, form neturl.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(ctx, method, u, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", base)
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		resp, err := h.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(out)
	}
	if st, body := do(http.MethodGet, link, nil); st != http.StatusOK || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("login link: %d\n%s", st, body)
	}
	if st, _ := do(http.MethodPost, base+"/ui/login", neturl.Values{"token": {token}}); st != http.StatusSeeOther {
		t.Fatalf("sign in: %d", st)
	}
	st, page := do(http.MethodGet, base+"/ui/approvals", nil)
	if st != http.StatusOK || !strings.Contains(page, id) {
		t.Fatalf("%s's page does not show %s's request %s: %d\n%s", a.Name, b.Name, id, st, page)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	// Without the CSRF token the approval is refused.
	if st, _ := do(http.MethodPost, base+"/ui/approvals/"+id+"/approve", neturl.Values{}); st != http.StatusForbidden {
		t.Errorf("an approval without the CSRF token: %d", st)
	}
	if st, body := do(http.MethodPost, base+"/ui/approvals/"+id+"/approve", neturl.Values{"csrf": {m[1]}}); st != http.StatusSeeOther && st != http.StatusOK {
		t.Fatalf("approve on %s: %d\n%s", a.Name, st, body)
	}

	var r *fleet.Response
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the waiting call was not released within the bound")
	}
	if r == nil || r.Error != nil || r.Result["isError"] == true || !strings.Contains(r.Text(), "appended") || r.Replica != "" && r.Replica != b.Name {
		t.Fatalf("the call on %s approved on %s: %+v", b.Name, a.Name, r)
	}
	if got, err := os.ReadFile(filepath.Join(files, "page.txt")); err != nil || string(got) != "x+page" {
		t.Errorf("page.txt holds %q (%v), want the append run once", got, err)
	}
}
