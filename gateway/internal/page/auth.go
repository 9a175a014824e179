package page

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Identity is who signed in to the page.
type Identity struct {
	// Principal is the person's principal, as the gateway names the
	// principals of calls: they decide that principal's approvals.
	Principal string
	// Name is how they are shown and audited; "" means Principal.
	Name string
	// Admin may approve changed tool definitions and read every
	// principal's audit records.
	Admin bool
}

// Display is the identity's name, its principal when unnamed, and
// "operator" for the unnamed empty principal.
func (id Identity) Display() string {
	switch {
	case id.Name != "":
		return id.Name
	case id.Principal != "":
		return id.Principal
	}
	return "operator"
}

// An Authenticator verifies who opens the page. The page hands it every
// request to /login and /login/... (GET and POST). It either answers the
// request itself (a sign-in form, a redirect to an identity provider, an
// error) and returns false, or returns the verified identity and true
// without writing, and the page starts a session. The page has refused
// cross-origin POSTs before (net/http's CrossOriginProtection), but has no
// session to check a CSRF token against yet.
type Authenticator interface {
	Authenticate(w http.ResponseWriter, r *http.Request) (Identity, bool)
}

// TokenLoginOptions configure a TokenLogin; nil means the defaults.
type TokenLoginOptions struct {
	// Identity is who signs in with a token. Nil means the operator of a
	// gateway that authenticates nobody: principal "", an admin.
	Identity *Identity
	// TTL bounds how long a token stays valid. Zero means 24 hours.
	TTL time.Duration
	// MaxTokens bounds the tokens outstanding; minting one more drops the
	// oldest. Zero means 8.
	MaxTokens int
	// Key, when set, also signs in with links minted elsewhere with it
	// ([SignedLink]), each good once until it expires: the operator's
	// terminal mints them from the key the gateway keeps in its state
	// directory (preflight login).
	Key []byte
	// SharedKeys, when set, are keys every replica of a fleet holds: the
	// first signs the links NewLink mints (each good once, within
	// MaxSignedTTL), so that the link one replica prints signs in on any;
	// each of them verifies a link (the keys of a rotation).
	SharedKeys [][]byte
	// Spent records the signed tokens used where every replica sees them,
	// so that a link signs in once fleet-wide. Nil means in this process.
	Spent SpentTokens
}

// SpentTokens records used sign-in tokens, for a fleet.
type SpentTokens interface {
	// Spend records the token id as used until it expires, and reports
	// whether it was not already. An error refuses the sign-in.
	Spend(ctx context.Context, id string, until time.Time) (first bool, err error)
}

// TokenLogin is the loopback sign-in: the gateway prints a login link
// holding a one-time token when it starts ([TokenLogin.NewLink]); opening
// it shows a sign-in button, and signing in uses the token up. Only
// hashes of the tokens are kept.
type TokenLogin struct {
	opts   TokenLoginOptions
	id     Identity
	mu     sync.Mutex
	tokens map[[32]byte]time.Time // hash -> expiry
	spent  map[[32]byte]time.Time // signed tokens used, by hash -> expiry
}

// NewTokenLogin returns a TokenLogin with no token yet.
func NewTokenLogin(o *TokenLoginOptions) *TokenLogin {
	var opts TokenLoginOptions
	if o != nil {
		opts = *o
	}
	if opts.TTL <= 0 {
		opts.TTL = 24 * time.Hour
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 8
	}
	id := Identity{Admin: true}
	if opts.Identity != nil {
		id = *opts.Identity
	}
	return &TokenLogin{opts: opts, id: id, tokens: map[[32]byte]time.Time{}, spent: map[[32]byte]time.Time{}}
}

// NewLink mints a one-time token and returns the login link under base
// (the page's root URL): base/login?token=... It is for the operator's
// terminal: whoever holds it can sign in once.
func (l *TokenLogin) NewLink(base string) (string, error) {
	if len(l.opts.SharedKeys) > 0 {
		return SignedLink(base, l.opts.SharedKeys[0], MaxSignedTTL)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("page address: want an absolute http or https URL")
	}
	token := randomToken()
	now := time.Now()
	l.mu.Lock()
	for h, exp := range l.tokens {
		if !now.Before(exp) {
			delete(l.tokens, h)
		}
	}
	for len(l.tokens) >= l.opts.MaxTokens {
		var oldest [32]byte
		var first time.Time
		for h, exp := range l.tokens {
			if first.IsZero() || exp.Before(first) {
				oldest, first = h, exp
			}
		}
		delete(l.tokens, oldest)
	}
	l.tokens[sha256.Sum256([]byte(token))] = now.Add(l.opts.TTL)
	l.mu.Unlock()
	link := u.JoinPath("login")
	link.RawQuery = url.Values{"token": {token}}.Encode()
	return link.String(), nil
}

// valid reports whether token is outstanding; use also spends it.
func (l *TokenLogin) valid(ctx context.Context, token string, use bool) bool {
	if strings.HasPrefix(token, signedPrefix) {
		return l.validSigned(ctx, token, use)
	}
	if len(token) != tokenLen {
		return false
	}
	h := sha256.Sum256([]byte(token))
	l.mu.Lock()
	defer l.mu.Unlock()
	exp, ok := l.tokens[h]
	if !ok || !time.Now().Before(exp) {
		delete(l.tokens, h)
		return false
	}
	if use {
		delete(l.tokens, h)
	}
	return true
}

// Authenticate implements Authenticator: GET /login?token=T shows the
// sign-in button for a valid token (and says what to do otherwise); POST
// /login with the token signs in and spends it.
func (l *TokenLogin) Authenticate(w http.ResponseWriter, r *http.Request) (Identity, bool) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if c := r.URL.Query().Get("challenge"); c != "" && len(l.opts.Key) > 0 {
			l.prove(w, c)
			return Identity{}, false
		}
		token := r.URL.Query().Get("token")
		data := loginView{Token: token, Valid: token != "" && l.valid(r.Context(), token, false), Given: token != ""}
		status := http.StatusOK
		if data.Given && !data.Valid {
			status = http.StatusForbidden
		}
		renderPlain(w, r, status, "login", "Sign in", data)
		return Identity{}, false
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil || !l.valid(r.Context(), r.PostForm.Get("token"), true) {
			renderPlain(w, r, http.StatusForbidden, "login", "Sign in", loginView{Given: true})
			return Identity{}, false
		}
		return l.id, true
	}
	w.Header().Set("Allow", "GET, HEAD, POST")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return Identity{}, false
}

// Signed login tokens: signedPrefix, then base64url of the expiry (Unix
// seconds, 8 bytes), a nonce (16 bytes) and their HMAC-SHA256 under the
// key.
const (
	signedPrefix = "s."
	signedLen    = 8 + 16 + sha256.Size
	// signedTokenLen is a signed token's length, prefix included.
	signedTokenLen = len(signedPrefix) + (signedLen*8+5)/6
	// MaxSignedTTL bounds the life of a signed link.
	MaxSignedTTL = time.Hour
	// maxSpent bounds the signed tokens remembered as used; past it, no
	// more sign in until some expire.
	maxSpent = 1024
)

// SignedLink returns a login link under base (the page's root URL) that a
// TokenLogin with the same Key accepts once, within ttl (at most
// MaxSignedTTL).
func SignedLink(base string, key []byte, ttl time.Duration) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("page address: want an absolute http or https URL")
	}
	if len(key) < 16 {
		return "", errors.New("login key: too short")
	}
	ttl = min(ttl, MaxSignedTTL)
	b := make([]byte, 24, signedLen)
	binary.BigEndian.PutUint64(b, uint64(time.Now().Add(ttl).Unix()))
	_, _ = rand.Read(b[8:24]) // crypto/rand.Read never fails
	mac := hmac.New(sha256.New, key)
	mac.Write(b)
	b = mac.Sum(b)
	link := u.JoinPath("login")
	link.RawQuery = url.Values{"token": {signedPrefix + base64.RawURLEncoding.EncodeToString(b)}}.Encode()
	return link.String(), nil
}

// maxChallenge bounds a key challenge's length.
const maxChallenge = 128

// KeyProof is the answer of a page holding key to challenge: proof that
// the page is the gateway's before a link signed with key is handed to it
// (`preflight login` asks first, so that a listener that took over a
// stopped gateway's port never gets one).
func KeyProof(key []byte, challenge string) string {
	derived := hmac.New(sha256.New, key)
	derived.Write([]byte("preflight/login-challenge"))
	mac := hmac.New(sha256.New, derived.Sum(nil))
	mac.Write([]byte(challenge))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// prove answers a key challenge with KeyProof.
func (l *TokenLogin) prove(w http.ResponseWriter, challenge string) {
	if len(challenge) > maxChallenge {
		http.Error(w, "challenge too long", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, KeyProof(l.opts.Key, challenge))
}

// validSigned checks a signed token: its MAC under the key, its expiry,
// and that it was not used; use spends it.
func (l *TokenLogin) validSigned(ctx context.Context, token string, use bool) bool {
	if (len(l.opts.Key) == 0 && len(l.opts.SharedKeys) == 0) || len(token) != signedTokenLen {
		return false
	}
	// Strict: one spelling per token (no ignored newlines or trailing
	// bits), so that a spent token cannot come back spelled otherwise.
	b, err := base64.RawURLEncoding.Strict().DecodeString(token[len(signedPrefix):])
	if err != nil || len(b) != signedLen {
		return false
	}
	signed := false
	for _, key := range append([][]byte{l.opts.Key}, l.opts.SharedKeys...) {
		if len(key) == 0 {
			continue
		}
		mac := hmac.New(sha256.New, key)
		mac.Write(b[:24])
		signed = signed || hmac.Equal(mac.Sum(nil), b[24:])
	}
	if !signed {
		return false
	}
	now := time.Now()
	exp := time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0)
	if !now.Before(exp) || exp.After(now.Add(MaxSignedTTL+time.Minute)) {
		return false
	}
	h := sha256.Sum256(b) // the token as decoded
	if l.opts.Spent != nil && use {
		first, err := l.opts.Spent.Spend(ctx, hex.EncodeToString(h[:]), exp)
		return err == nil && first
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, used := l.spent[h]; used {
		return false
	}
	if !use {
		return true
	}
	for k, e := range l.spent {
		if !now.Before(e) {
			delete(l.spent, k)
		}
	}
	if len(l.spent) >= maxSpent {
		return false
	}
	l.spent[h] = exp
	return true
}

// loginView is the sign-in page's data.
type loginView struct {
	Token        string
	Given, Valid bool
	Error        string
}

// tokenLen is the length of a random token: 32 bytes in base64url.
const tokenLen = 43

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
