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

// TestPageApproval checks the approval page of a fleet: the link a
// legacy client waiting at one replica is given, and the login link
// another prints, name approvals.pageUrl (HAProxy's address); signed in
// with that login link, the operator stays signed in on every replica
// through HAProxy (the sessions are in Redis), approves the request there,
// and the call is released and runs once; a sign-out ends the session on
// every replica.
func TestPageApproval(t *testing.T) {
	f := fleet.Start(t, nil)
	files := filepath.Join(f.Dir, "data", "files")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	a, b := f.Replicas[0], f.Replicas[1]
	mkdirs(t, files, "page.txt")

	type elicitation struct{ Mode, ElicitationID, URL string }
	ids := make(chan elicitation, 1)
	c := &fleet.Client{URL: b.URL, Version: fleet.Legacy,
		Capabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
		OnRequest: func(method string, params json.RawMessage) any {
			var p elicitation
			if method != "elicitation/create" || json.Unmarshal(params, &p) != nil || p.Mode != "url" {
				return nil
			}
			ids <- p
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
	var asked elicitation
	select {
	case asked = <-ids:
	case r := <-done:
		t.Fatalf("the call ended without asking for approval: %+v", r)
	case <-ctx.Done():
		t.Fatal("no URL elicitation within the bound")
	}
	id := asked.ElicitationID
	if !strings.HasPrefix(asked.URL, f.PageURL+"/") {
		t.Errorf("%s gave the client the approval link %s, want one under approvals.pageUrl %s", b.Name, asked.URL, f.PageURL)
	}

	// The page through HAProxy, signed in with the link replica A printed:
	// it is signed with the key the replicas derive from requestState's,
	// so B signs in with it (addressed to HAProxy's host, as through
	// HAProxy), once for the whole fleet: A then refuses it. Every request
	// after it goes through HAProxy, to both replicas.
	link, token, err := a.LoginLink()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(link, f.PageURL+"/login?") {
		t.Fatalf("%s printed the login link %s, want one under approvals.pageUrl %s", a.Name, link, f.PageURL)
	}
	base := strings.TrimSuffix(f.PageURL, "/ui")
	lbHost := strings.TrimPrefix(base, "http://")
	aBase := strings.TrimSuffix(a.URL, "/mcp")
	jar, _ := cookiejar.New(nil)
	h := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, u string, form neturl.Values) (int, string, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequestWithContext(ctx, method, u, body)
		req.Host = lbHost
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
		return resp.StatusCode, string(out), resp.Header.Get("X-Preflight-Replica")
	}
	bBase := strings.TrimSuffix(b.URL, "/mcp")
	for range 2 {
		if st, body, replica := do(http.MethodGet, base+"/ui/login?token="+neturl.QueryEscape(token), nil); st != http.StatusOK || !strings.Contains(body, `id="signin"`) {
			t.Fatalf("%s's login link through HAProxy (%s): %d\n%s", a.Name, replica, st, body)
		}
	}
	if st, _, _ := do(http.MethodPost, bBase+"/ui/login", neturl.Values{"token": {token}}); st != http.StatusSeeOther {
		t.Fatalf("sign in on %s with %s's link: %d", b.Name, a.Name, st)
	}
	replay, _ := http.NewRequestWithContext(ctx, http.MethodPost, aBase+"/ui/login", strings.NewReader(neturl.Values{"token": {token}}.Encode()))
	replay.Host = lbHost
	replay.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	replay.Header.Set("Origin", base)
	replay.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultTransport.RoundTrip(replay)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%s's link used on %s, then again on %s: %d, want 403", a.Name, b.Name, a.Name, resp.StatusCode)
	}
	var page string
	servedBy := map[string]bool{}
	for range 4 {
		st, body, replica := do(http.MethodGet, base+"/ui/approvals", nil)
		if st != http.StatusOK || !strings.Contains(body, id) {
			t.Fatalf("the page through HAProxy (%s) does not show %s's request %s: %d\n%s", replica, b.Name, id, st, body)
		}
		servedBy[replica], page = true, body
	}
	if len(servedBy) != 2 {
		t.Errorf("4 page requests through HAProxy reached %v, want both replicas", servedBy)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	// Without the CSRF token the approval is refused.
	if st, _, _ := do(http.MethodPost, base+"/ui/approvals/"+id+"/approve", neturl.Values{}); st != http.StatusForbidden {
		t.Errorf("an approval without the CSRF token: %d", st)
	}
	if st, body, replica := do(http.MethodPost, base+"/ui/approvals/"+id+"/approve", neturl.Values{"csrf": {m[1]}}); st != http.StatusSeeOther && st != http.StatusOK {
		t.Fatalf("approve through HAProxy (%s): %d\n%s", replica, st, body)
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

	// Signed out through HAProxy, signed out on both replicas: the
	// session's cookie, sent again to each, opens the page on neither.
	cookies := jar.Cookies(&neturl.URL{Scheme: "http", Host: lbHost})
	if len(cookies) == 0 {
		t.Fatal("no session cookie for HAProxy's address")
	}
	if st, body, replica := do(http.MethodPost, base+"/ui/logout", neturl.Values{"csrf": {m[1]}}); st != http.StatusOK {
		t.Fatalf("sign out through HAProxy (%s): %d\n%s", replica, st, body)
	}
	for _, u := range []string{aBase, bBase} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/ui/approvals", nil)
		req.Host = lbHost
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("%s still serves the page to the session signed out", u)
		}
	}
}
