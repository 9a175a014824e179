package auth

import (
	"net/http"
)

// credentialHeaders carry a client's credentials to the gateway. None is
// ever forwarded to an upstream: the MCP authorization spec forbids token
// passthrough, and a cookie of the gateway's page is the gateway's.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// StripCredentials removes from h every header that carries a client's
// credentials: Authorization, Proxy-Authorization and Cookie. Code that
// copies headers of a client's request into an upstream's calls it on the
// copy; [UpstreamTransport] calls it on every upstream request.
func StripCredentials(h http.Header) {
	for _, k := range credentialHeaders {
		h.Del(k)
	}
}

// UpstreamTransport returns the RoundTripper of an upstream's HTTP client
// (the one given to the SDK's client transport for an http or sse
// server). Every request leaves with no credential header it was given
// (whatever was copied into it from a client's request) and with the
// upstream's own: headers, then "Authorization: Bearer" and bearerToken
// when set. base nil means http.DefaultTransport.
func UpstreamTransport(base http.RoundTripper, headers map[string]string, bearerToken string) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &upstreamTransport{base: base, headers: headers, token: bearerToken}
}

type upstreamTransport struct {
	base    http.RoundTripper
	headers map[string]string
	token   string
}

func (t *upstreamTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not modify its request
	StripCredentials(r.Header)
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	if t.token != "" {
		r.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(r)
}
