package page

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/loopback"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Options configure the page; nil means the defaults.
type Options struct {
	// Approvals are the calls waiting for a person. Nil shows none.
	Approvals Approvals
	// Audit is the audit log. Nil: the page says none is configured.
	Audit AuditLog
	// Safety gives the tools' safety tables. Nil: none shown.
	Safety Safety
	// Pins lists pinned definitions. Nil: pinning is off.
	Pins Pins
	// Connections are the upstreams people connect with their own
	// accounts. Nil: none.
	Connections Connections
	// Sessions keeps the sessions. Nil means NewMemSessions(nil).
	Sessions Sessions
	// SessionTTL bounds a session. Zero means 12 hours.
	SessionTTL time.Duration
	// Hosts are the host names (without port) requests may address. Nil
	// means loopback only: localhost and loopback IP addresses. A page
	// served elsewhere lists its public name, and signs people in through
	// an identity provider.
	Hosts []string
	// Secure marks the cookies Secure even when the request did not come
	// over TLS (a proxy terminates it). Requests over TLS always get
	// Secure cookies.
	Secure bool
	// Prefix is the path the page is served under ("/ui"); "" means the
	// root.
	Prefix string
	// Refresh is how often the pending approvals refresh themselves in
	// an open page. Zero means 5 seconds; negative turns it off.
	Refresh time.Duration
	// ChartWindow is the time the chart of calls covers. Zero means 24
	// hours.
	ChartWindow time.Duration
	// Logger receives failures of the sources. Nil discards.
	Logger *slog.Logger
}

// Handler serves the page.
type Handler struct {
	auth    Authenticator
	opts    Options
	mux     *http.ServeMux
	origins *http.CrossOriginProtection
}

// New returns the page, signing people in with auth.
func New(auth Authenticator, o *Options) (*Handler, error) {
	if auth == nil {
		return nil, errors.New("page: an Authenticator is required")
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Sessions == nil {
		opts.Sessions = NewMemSessions(nil)
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.Refresh == 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.ChartWindow <= 0 {
		opts.ChartWindow = 24 * time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	if opts.Prefix != "" && (!strings.HasPrefix(opts.Prefix, "/") || strings.ContainsAny(opts.Prefix, "?#{}") || path(opts.Prefix) != opts.Prefix) {
		return nil, errors.New("page: Prefix must be a clean absolute path such as /ui")
	}
	h := &Handler{auth: auth, opts: opts, mux: http.NewServeMux(), origins: http.NewCrossOriginProtection()}
	p := opts.Prefix
	h.mux.HandleFunc(p+"/login", h.login)
	h.mux.HandleFunc(p+"/login/", h.login)
	h.mux.HandleFunc("POST "+p+"/logout", h.signedIn(h.logout))
	h.mux.HandleFunc("GET "+p+"/{$}", h.signedIn(h.dashboard))
	h.mux.HandleFunc("GET "+p+"/approvals", h.signedIn(h.approvals))
	h.mux.HandleFunc("GET "+p+"/approvals/{id}", h.signedIn(h.approval))
	h.mux.HandleFunc("POST "+p+"/approvals/{id}/{verb}", h.signedIn(h.decide))
	h.mux.HandleFunc("GET "+p+"/fragments/pending", h.signedIn(h.pendingFragment))
	h.mux.HandleFunc("GET "+p+"/audit", h.signedIn(h.audit))
	h.mux.HandleFunc("GET "+p+"/tools", h.signedIn(h.tools))
	h.mux.HandleFunc("GET "+p+"/pins", h.signedIn(h.pins))
	h.mux.HandleFunc("POST "+p+"/pins/approve", h.signedIn(h.approvePin))
	h.mux.HandleFunc("GET "+p+"/connections", h.signedIn(h.connections))
	h.mux.HandleFunc("GET "+p+"/connections/{server}/connect", h.signedIn(h.connect))
	h.mux.HandleFunc("GET "+p+"/connections/callback", h.connected)
	h.mux.HandleFunc("GET "+p+"/connections/client.json", h.clientMetadata)
	h.mux.HandleFunc("POST "+p+"/connections/{server}/disconnect", h.signedIn(h.disconnect))
	return h, nil
}

// path cleans p as a URL path.
func path(p string) string {
	u := url.URL{Path: p}
	return u.JoinPath().Path
}

// Limits on what a request may send.
const (
	// maxFormBytes bounds a POSTed form.
	maxFormBytes = 8 << 10
)

// ServeHTTP implements http.Handler: it sets the security headers, refuses
// hosts it does not serve and cross-origin POSTs, and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	nonce := randomNonce()
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'nonce-"+nonce+"'; style-src 'nonce-"+nonce+"'; "+
		"img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if !h.hostAllowed(r.Host) {
		http.Error(w, "This page does not serve the host "+strings.ToValidUTF8(text.Clip(r.Host, 80), "?")+
			": open it by a loopback address, or list the host in the page's hosts.", http.StatusMisdirectedRequest)
		return
	}
	if err := h.origins.Check(r); err != nil {
		http.Error(w, "Refused: the request came from another site.", http.StatusForbidden)
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), nonceKey{}, nonce), prefixKey{}, h.opts.Prefix)
	h.mux.ServeHTTP(w, r.WithContext(ctx))
}

// hostAllowed reports whether the page serves host (the request's Host,
// with or without a port).
func (h *Handler) hostAllowed(host string) bool { return HostAllowed(h.opts.Hosts, host) }

// HostAllowed reports whether a request naming host (its Host header, with
// or without a port) addresses one of hosts, nil meaning loopback names
// only (localhost and loopback IP addresses): the check against DNS
// rebinding of the page and of what else the gateway serves.
func HostAllowed(hosts []string, host string) bool {
	name := host
	if hn, _, err := net.SplitHostPort(host); err == nil {
		name = hn
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	if hosts != nil {
		return slices.ContainsFunc(hosts, func(a string) bool { return strings.EqualFold(a, name) })
	}
	return loopback.Is(name)
}

type nonceKey struct{}

func randomNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	// base64url: nothing html/template would escape in the attribute.
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Cookie names: with Secure, the __Host- prefix binds the cookie to this
// host and path /.
const (
	cookieName     = "preflight_session"
	securePrefix   = "__Host-"
	nextCookieName = "preflight_next"
)

func (h *Handler) secure(r *http.Request) bool { return h.opts.Secure || r.TLS != nil }

// perGateway names a cookie of this gateway's page: browsers keep cookies
// per host, not per port, so two gateways on one machine would take each
// other's; the port the page is addressed on tells them apart.
func perGateway(r *http.Request, name string) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return name + "_" + port
	}
	return name
}

func (h *Handler) sessionCookieName(r *http.Request) string {
	name := perGateway(r, cookieName)
	if h.secure(r) {
		return securePrefix + name
	}
	return name
}

func nextCookie(r *http.Request) string { return perGateway(r, nextCookieName) }

// viewer is the signed-in request's session.
type viewer struct {
	key string
	Session
}

type viewerKey struct{}

// signedIn runs next for a request with a live session; it sends a GET
// without one to sign in (remembering where it was going), and refuses
// other requests. A POST must carry the session's CSRF token.
func (h *Handler) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok := h.session(r)
		if !ok {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				if h.localPath(r.URL.RequestURI()) {
					http.SetCookie(w, &http.Cookie{Name: nextCookie(r), Value: url.QueryEscape(r.URL.RequestURI()), Path: h.opts.Prefix + "/",
						MaxAge: 600, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
				}
				http.Redirect(w, r, h.opts.Prefix+"/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "Sign in first: your session has ended.", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "The form could not be read.", http.StatusBadRequest)
				return
			}
			if t := r.PostForm.Get("csrf"); subtle.ConstantTimeCompare([]byte(t), []byte(v.CSRF)) != 1 {
				http.Error(w, "Refused: the form's CSRF token does not match your session. Reload the page and try again.", http.StatusForbidden)
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	}
}

// session returns the request's live session.
func (h *Handler) session(r *http.Request) (viewer, bool) {
	c, err := r.Cookie(h.sessionCookieName(r))
	if err != nil || len(c.Value) != tokenLen {
		return viewer{}, false
	}
	key := sessionKey(c.Value)
	s, err := h.opts.Sessions.Get(r.Context(), key, time.Now())
	if err != nil {
		if !errors.Is(err, ErrNoSession) {
			h.opts.Logger.Warn("page sessions unavailable", "err", err)
		}
		return viewer{}, false
	}
	return viewer{key: key, Session: s}, true
}

func viewerOf(r *http.Request) viewer { v, _ := r.Context().Value(viewerKey{}).(viewer); return v }

// login hands the request to the Authenticator and starts a session for
// the identity it verifies.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	id, ok := h.auth.Authenticate(w, r)
	if !ok {
		return
	}
	token := randomToken()
	now := time.Now()
	s := Session{Identity: id, CSRF: randomToken(), Created: now, Expires: now.Add(h.opts.SessionTTL)}
	if old, ok := h.session(r); ok { // a new session replaces the browser's old one
		_ = h.opts.Sessions.Delete(r.Context(), old.key)
	}
	switch err := h.opts.Sessions.Create(r.Context(), sessionKey(token), s); {
	case errors.Is(err, ErrSessionsFull):
		h.opts.Logger.Warn("page sign-in refused: every session is an admin's", "principal", id.Principal)
		http.Error(w, "Too many people are signed in to the page: try again when one signs out.", http.StatusServiceUnavailable)
		return
	case err != nil:
		h.opts.Logger.Error("page session not stored", "err", err)
		http.Error(w, "The session could not be started; try again.", http.StatusServiceUnavailable)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: h.sessionCookieName(r), Value: token, Path: "/", MaxAge: int(h.opts.SessionTTL / time.Second),
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
	next := h.opts.Prefix + "/"
	if c, err := r.Cookie(nextCookie(r)); err == nil {
		if v, err := url.QueryUnescape(c.Value); err == nil && h.localPath(v) {
			next = v
		}
		http.SetCookie(w, &http.Cookie{Name: nextCookie(r), Path: h.opts.Prefix + "/", MaxAge: -1, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// localPath reports whether p is a path of this page to return to after
// signing in (never another site).
func (h *Handler) localPath(p string) bool {
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && strings.HasPrefix(p, h.opts.Prefix+"/") &&
		!strings.HasPrefix(p, "//") && !strings.ContainsAny(p, "\\\r\n") && !strings.HasPrefix(u.Path, h.opts.Prefix+"/login") &&
		!strings.HasPrefix(u.Path, h.opts.Prefix+"/fragments/")
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	_ = h.opts.Sessions.Delete(r.Context(), v.key)
	http.SetCookie(w, &http.Cookie{Name: h.sessionCookieName(r), Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteStrictMode})
	renderPlain(w, r, http.StatusOK, "loggedout", "Signed out", nil)
}

//go:embed templates/*.html
var templateFS embed.FS

// templates are parsed once; they are not exported and never change.
var templates = template.Must(template.New("").Funcs(funcs()).ParseFS(templateFS, "templates/*.html"))

// view is what every page's template gets.
type view struct {
	Title  string
	Nav    string
	Nonce  string
	Prefix string
	Who    *Identity
	CSRF   string
	// Refresh is the pending list's refresh interval in milliseconds (0:
	// none).
	Refresh int64
	Page    any
}

// render writes the template name as a whole page for a signed-in viewer.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, page any) {
	v := viewerOf(r)
	data := view{Title: title, Nav: name, Nonce: nonceOf(r), Prefix: h.opts.Prefix, Who: &v.Identity, CSRF: v.CSRF, Page: page}
	if h.opts.Refresh > 0 {
		data.Refresh = h.opts.Refresh.Milliseconds()
	}
	write(w, status, name, data)
}

// renderPlain writes a page for someone not signed in.
func renderPlain(w http.ResponseWriter, r *http.Request, status int, name, title string, page any) {
	prefix := ""
	if p, ok := r.Context().Value(prefixKey{}).(string); ok {
		prefix = p
	}
	write(w, status, name, view{Title: title, Nav: name, Nonce: nonceOf(r), Prefix: prefix, Page: page})
}

type prefixKey struct{}

func nonceOf(r *http.Request) string { n, _ := r.Context().Value(nonceKey{}).(string); return n }

func write(w http.ResponseWriter, status int, name string, data view) {
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		http.Error(w, "The page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}
