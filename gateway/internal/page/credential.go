package page

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// VerifyFunc checks a credential a person pasted and returns who they
// are. Its error is logged (it must never hold the credential) and not
// shown.
type VerifyFunc func(ctx context.Context, credential string) (Identity, error)

// CredentialLoginOptions configure a CredentialLogin; nil means the
// defaults.
type CredentialLoginOptions struct {
	// Verify checks a credential. Required.
	Verify VerifyFunc
	// Link, when set, also signs in with its one-time login links
	// (/login?token=...), as on a loopback deployment.
	Link *TokenLogin
	// MaxBytes bounds a credential; a longer one is refused unread. Zero
	// means 16 KiB.
	MaxBytes int
	// Failures is how many refused sign-ins a client address may have in
	// Window before it must wait; zero means 10. Window zero means 10
	// minutes.
	Failures int
	Window   time.Duration
	// MaxClients bounds the client addresses whose failures are
	// remembered; when full, the one whose window ends first is forgotten.
	// Zero means 4096.
	MaxClients int
	// Hint says where a person gets a credential, shown on the form ("").
	Hint string
	// Logger receives refused sign-ins (address and reason, never the
	// credential). Nil discards.
	Logger *slog.Logger
}

// CredentialLogin signs a person in with a credential they paste into a
// form (POST, never in the URL): the gateway's own bearer token or an
// access token its identity provider gave them, checked by Verify as the
// gateway checks its clients. The credential is never shown back, and
// failed attempts are limited per client address.
type CredentialLogin struct {
	opts CredentialLoginOptions
	mu   sync.Mutex
	fail map[string]failures // client address -> failures in the window
}

type failures struct {
	n   int
	end time.Time
}

// NewCredentialLogin returns a CredentialLogin; it panics without Verify.
func NewCredentialLogin(o *CredentialLoginOptions) *CredentialLogin {
	var opts CredentialLoginOptions
	if o != nil {
		opts = *o
	}
	if opts.Verify == nil {
		panic("page: CredentialLoginOptions.Verify is required")
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 16 << 10
	}
	if opts.Failures <= 0 {
		opts.Failures = 10
	}
	if opts.Window <= 0 {
		opts.Window = 10 * time.Minute
	}
	if opts.MaxClients <= 0 {
		opts.MaxClients = 4096
	}
	return &CredentialLogin{opts: opts, fail: map[string]failures{}}
}

// credentialView is the credential sign-in form's data.
type credentialView struct {
	Hint, Error string
	Link        bool
}

// Authenticate implements Authenticator: GET /login shows the form (or,
// with a Link, a login link's button); POST /login with credential signs
// in.
func (l *CredentialLogin) Authenticate(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if l.opts.Link != nil && (r.URL.Query().Has("token") || r.URL.Query().Has("challenge")) {
			return l.opts.Link.Authenticate(w, r)
		}
		l.form(w, r, http.StatusOK, "")
		return Identity{}, false
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return Identity{}, false
	}
	client := clientAddr(r)
	if wait := l.blocked(client); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		l.form(w, r, http.StatusTooManyRequests, "Too many refused sign-ins from your address: wait "+wait.Round(time.Second).String()+" and try again.")
		return Identity{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, int64(l.opts.MaxBytes)+maxFormBytes)
	if err := r.ParseForm(); err != nil {
		l.refused(client, "the form could not be read")
		l.form(w, r, http.StatusRequestEntityTooLarge, "The form could not be read: a credential is at most "+strconv.Itoa(l.opts.MaxBytes)+" bytes.")
		return Identity{}, false
	}
	if l.opts.Link != nil && r.PostForm.Has("token") {
		id, ok := l.opts.Link.Authenticate(w, r)
		if !ok {
			l.refused(client, "login link not valid")
		}
		return id, ok
	}
	cred := r.PostForm.Get("credential")
	switch {
	case cred == "":
		l.form(w, r, http.StatusBadRequest, "Paste your credential to sign in.")
		return Identity{}, false
	case len(cred) > l.opts.MaxBytes:
		l.refused(client, "credential too long")
		l.form(w, r, http.StatusForbidden, refusedText)
		return Identity{}, false
	}
	id, err := l.opts.Verify(r.Context(), cred)
	if err != nil {
		l.refused(client, err.Error())
		l.form(w, r, http.StatusForbidden, refusedText)
		return Identity{}, false
	}
	return id, true
}

const refusedText = "That credential was not accepted: it is unknown, expired, or not meant for this gateway."

func (l *CredentialLogin) form(w http.ResponseWriter, r *http.Request, status int, msg string) {
	renderPlain(w, r, status, "credential", "Sign in", credentialView{Hint: l.opts.Hint, Error: msg, Link: l.opts.Link != nil})
}

// clientAddr is the request's client IP address (without port).
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// blocked returns how long client must wait before it may try again.
func (l *CredentialLogin) blocked(client string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.fail[client]
	now := time.Now()
	if !ok || !now.Before(f.end) {
		return 0
	}
	if f.n >= l.opts.Failures {
		return f.end.Sub(now)
	}
	return 0
}

// refused counts a failed sign-in from client and logs why.
func (l *CredentialLogin) refused(client, why string) {
	if l.opts.Logger != nil {
		l.opts.Logger.Info("page sign-in refused", "client", client, "reason", why)
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.fail[client]
	if !ok || !now.Before(f.end) {
		f = failures{end: now.Add(l.opts.Window)}
	}
	f.n++
	if !ok && len(l.fail) >= l.opts.MaxClients {
		var first string
		var end time.Time
		for k, v := range l.fail {
			if !now.Before(v.end) {
				delete(l.fail, k)
				continue
			}
			if first == "" || v.end.Before(end) {
				first, end = k, v.end
			}
		}
		if len(l.fail) >= l.opts.MaxClients {
			delete(l.fail, first)
		}
	}
	l.fail[client] = f
}
