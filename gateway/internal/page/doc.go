// Package page is the gateway's web page: the calls waiting for a person's
// approval (approve, deny), the audit log with filters, each tool's
// effective safety, pinned and quarantined tool definitions, and a chart of
// calls by effect and decision over time.
//
// [New] returns an http.Handler. Everything it serves is in the binary
// (templates embedded with go:embed, styles and the one small script
// inline under a per-response CSP nonce, the chart as server-made SVG); it
// fetches nothing from elsewhere. By default it answers only requests
// addressed to a loopback host name ([Options.Hosts]), and the gateway
// serves it on a loopback address.
//
// Whoever opens the page signs in through an [Authenticator]:
// [TokenLogin] implements the loopback flow (a one-time login link the
// gateway prints when it starts), and an identity provider plugs in
// behind the same interface. A sign-in starts a session (a random
// cookie, HttpOnly, SameSite=Strict, Secure over TLS; sessions are bounded
// in number and time). Every POST carries the session's CSRF token and
// must come from the page's own origin. A person sees and decides only
// the approvals of their own principal (unless the approvals say they are
// an admin), and only an admin approves a changed tool definition or reads
// everyone's audit records.
//
// Server-supplied text (tool names, descriptions, arguments, reasons) is
// escaped by html/template and never marked safe.
package page
