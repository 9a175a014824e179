//go:build integration

package oauthas

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// grantCode runs the authorization code flow with PKCE as subject, for
// client, and returns the token.
func grantCode(t *testing.T, a *AS, cfg *oauth2.Config, subject string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	u := cfg.AuthCodeURL("state-12345", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", "http://127.0.0.1:1/mcp"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: UserCookie, Value: subject})
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("authorize: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, a.client)
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestServer: a code granted with PKCE gives an access token that
// introspects as its subject with its scopes, and a refresh token that
// does not introspect; a refresh is counted and its token lives as long
// as set; the authorization's resource is recorded; revoking the subject
// ends its tokens, and a subject without grants cannot be revoked.
func TestServer(t *testing.T) {
	a := Start(t)
	if got := a.Resources(); len(got) != 0 {
		t.Fatalf("resources before any authorization: %q", got)
	}
	cfg := &oauth2.Config{
		ClientID: ConfidentialClient, ClientSecret: ConfidentialSecret,
		Endpoint:    oauth2.Endpoint{AuthURL: a.URL + "/oauth2/auth", TokenURL: a.URL + "/oauth2/token"},
		RedirectURL: "http://127.0.0.1:9" + RedirectPath, Scopes: []string{Scope, "offline_access"},
	}
	a.SetAccessTTL(time.Hour, 2*time.Hour)
	tok := grantCode(t, a, cfg, "alice")
	sub, scopes, exp, err := a.introspect(t.Context(), tok.AccessToken)
	if err != nil || sub != "alice" || !slices.Equal(scopes, []string{Scope, "offline_access"}) {
		t.Fatalf("introspection: %q %q %v", sub, scopes, err)
	}
	if d := time.Until(exp); d < 50*time.Minute || d > 70*time.Minute {
		t.Errorf("the access token expires in %s, want about an hour", d)
	}
	if _, _, _, err := a.introspect(t.Context(), tok.RefreshToken); err == nil {
		t.Error("a refresh token introspected as active")
	}
	if got := a.Resources(); !slices.Equal(got, []string{"http://127.0.0.1:1/mcp"}) {
		t.Errorf("resources %q", got)
	}

	tok.Expiry = time.Now().Add(-time.Minute)
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, a.client)
	fresh, err := cfg.TokenSource(ctx, tok).Token()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.RefreshToken == tok.RefreshToken {
		t.Error("the refresh token was not rotated")
	}
	if n := a.Refreshes("alice"); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if _, _, exp, err := a.introspect(t.Context(), fresh.AccessToken); err != nil || time.Until(exp) < 110*time.Minute {
		t.Errorf("the refreshed access token: expires %v, %v; want in about two hours", exp, err)
	}

	if err := a.RevokeSubject(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := a.introspect(t.Context(), fresh.AccessToken); err == nil {
		t.Error("an access token of a revoked grant introspected as active")
	}
	if err := a.RevokeSubject(t.Context(), "alice"); err == nil {
		t.Error("revoking a subject without grants succeeded")
	}
}

// TestServerRefusals: the authorize endpoint refuses a browser nobody
// logged in on and a request without PKCE; the control endpoints refuse
// lifespans out of range; introspection refuses a client without the
// secret.
func TestServerRefusals(t *testing.T) {
	a := Start(t)
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	q := url.Values{"client_id": {PublicClient}, "response_type": {"code"}, "scope": {Scope}, "state": {"state-12345"},
		"redirect_uri": {"http://127.0.0.1:9" + RedirectPath}, "code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	for _, c := range []struct {
		name   string
		cookie bool
		want   string
	}{{"nobody logged in", false, "access_denied"}, {"no PKCE", true, "invalid_request"}} {
		name, cookie := c.name, c.cookie
		qq := cloneValues(q)
		if cookie {
			qq.Del("code_challenge")
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, a.URL+"/oauth2/auth?"+qq.Encode(), nil)
		if cookie {
			req.AddCookie(&http.Cookie{Name: UserCookie, Value: "alice"})
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil || loc.Query().Get("error") != c.want || loc.Query().Get("code") != "" {
			t.Errorf("%s: %s, Location %q, want the error %s", name, resp.Status, resp.Header.Get("Location"), c.want)
		}
	}
	for _, form := range []url.Values{
		{"from_code": {"0s"}, "from_refresh": {"1h"}},
		{"from_code": {"1h"}, "from_refresh": {"48h"}},
		{"from_code": {"soon"}, "from_refresh": {"1h"}},
		{"from_code": {"1h"}},
	} {
		if err := a.post(t.Context(), "/test/access-ttl", form); err == nil {
			t.Errorf("lifespans %v accepted", form)
		}
	}
	req, _ := a.form(t.Context(), "/oauth2/introspect", url.Values{"token": {"x"}})
	req.SetBasicAuth(resourceClient, "wrong")
	if err := a.do(req, http.StatusOK, nil); err == nil {
		t.Error("introspection with a wrong secret answered 200")
	}
}

func cloneValues(v url.Values) url.Values {
	c := url.Values{}
	for k, vs := range v {
		c[k] = slices.Clone(vs)
	}
	return c
}
