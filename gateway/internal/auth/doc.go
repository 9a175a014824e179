// Package auth authenticates the gateway's clients and says who is
// calling.
//
// [New] builds an [Authenticator] from the config's auth section: static
// bearer tokens, stored as their SHA-256 and compared in constant time;
// an OAuth 2.1 resource server that accepts JWT access tokens of one
// issuer, checked against the issuer's published keys (fetched, cached,
// refreshed, with a bound on how often); or both. Without either, every
// client is anonymous, which is allowed only on a loopback listener.
//
// [Authenticator.Middleware] wraps the MCP endpoint: a request gets a
// [Principal] or is refused (401 with a WWW-Authenticate challenge, 403
// for missing scopes). The principal reaches HTTP handlers through the
// request's context ([FromContext]) and MCP handlers through the SDK's
// req.Extra.TokenInfo ([FromRequest]), whose UserID is the principal's
// name, as packages disclose, requeststate and resolve read it.
// [Authenticator.Handle] serves the protected-resource metadata (RFC
// 9728) that OAuth clients start from.
//
// A client's token never leaves the gateway: the middleware removes the
// Authorization header once it is verified, and [UpstreamTransport]
// strips every credential header from requests to upstreams before
// adding the upstream's own.
//
// The design and its choices are in docs/auth.md.
package auth
