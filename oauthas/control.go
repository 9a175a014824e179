package main

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxAccessTTL bounds the lifespans a test may set.
const maxAccessTTL = 24 * time.Hour

// setAccessTTL sets the lifespans of the access tokens granted from now
// on: from_code for those exchanged for a code, from_refresh for those of
// a refresh.
func (s *server) setAccessTTL(w http.ResponseWriter, r *http.Request) {
	fromCode, err1 := lifespan(r.PostFormValue("from_code"))
	fromRefresh, err2 := lifespan(r.PostFormValue("from_refresh"))
	if err1 != nil || err2 != nil {
		http.Error(w, "from_code and from_refresh must be durations between 1s and 24h", http.StatusBadRequest)
		return
	}
	s.ttl.fromCode.Store(int64(fromCode))
	s.ttl.fromRefresh.Store(int64(fromRefresh))
	w.WriteHeader(http.StatusNoContent)
}

func lifespan(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && (d < time.Second || d > maxAccessTTL) {
		err = errOutOfRange
	}
	return d, err
}

var errOutOfRange = errors.New("out of range")

// refreshCounts answers with the refresh grants of each subject.
func (s *server) refreshCounts(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	counts := maps.Clone(s.refreshes)
	s.mu.Unlock()
	writeJSON(w, counts)
}

// resourcesSeen answers with the resource parameters of the
// authorizations, oldest first ("" for none).
func (s *server) resourcesSeen(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	seen := slices.Clone(s.resources)
	s.mu.Unlock()
	if seen == nil {
		seen = []string{}
	}
	writeJSON(w, seen)
}

// revokeSubject revokes every grant of subject: its refresh tokens and
// their access tokens.
func (s *server) revokeSubject(w http.ResponseWriter, r *http.Request) {
	subject := r.PostFormValue("subject")
	s.mu.Lock()
	gs := s.issued[subject]
	delete(s.issued, subject)
	s.mu.Unlock()
	if len(gs) == 0 {
		http.Error(w, "no grant to revoke", http.StatusNotFound)
		return
	}
	if err := s.revokeGrants(r.Context(), gs); err != nil {
		http.Error(w, "revocation: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// revocationRequest is the request g's client sends to revoke it.
func revocationRequest(ctx context.Context, g grant) (*http.Request, error) {
	form := url.Values{"token": {g.refreshToken}, "token_type_hint": {"refresh_token"}}
	if g.client == publicClient {
		form.Set("client_id", publicClient)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/oauth2/revoke", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if g.client == confidentialClient {
		req.SetBasicAuth(confidentialClient, confidentialSecret)
	}
	return req, nil
}

// revokeGrants revokes the grants at the revocation endpoint's handler, as
// their clients would.
func (s *server) revokeGrants(ctx context.Context, gs []grant) error {
	for _, g := range gs {
		req, err := revocationRequest(ctx, g)
		if err != nil {
			return err
		}
		if err := s.provider.NewRevocationRequest(ctx, req); err != nil {
			return err
		}
	}
	return nil
}
