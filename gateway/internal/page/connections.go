package page

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// connectionsView is the Connections view's data.
type connectionsView struct {
	Missing     bool
	Connections []Connection
	Admin       bool
	Error       string
	Message     string
}

func (h *Handler) connections(w http.ResponseWriter, r *http.Request) {
	h.showConnections(w, r, http.StatusOK, "", "")
}

func (h *Handler) showConnections(w http.ResponseWriter, r *http.Request, status int, msg, failure string) {
	v := viewerOf(r)
	cv := connectionsView{Missing: h.opts.Connections == nil, Admin: v.Identity.Admin, Message: msg, Error: failure}
	if h.opts.Connections != nil {
		cs, err := h.opts.Connections.Connections(r.Context(), v.Identity.Principal)
		if err != nil {
			h.opts.Logger.Warn("page: connections unavailable", "err", err)
			cv.Error = "The connections could not be read; try again shortly."
		}
		cv.Connections = cs
	}
	h.render(w, r, status, "connections", "Connections", cv)
}

// connect sends the browser to the upstream's authorization server.
func (h *Handler) connect(w http.ResponseWriter, r *http.Request) {
	if h.opts.Connections == nil {
		h.fail(w, r, http.StatusNotFound, "No upstream signs in with OAuth.")
		return
	}
	v := viewerOf(r)
	server := r.PathValue("server")
	if !h.mayConnect(r, server) {
		h.fail(w, r, http.StatusForbidden, "Only an admin connects an upstream whose connection everybody shares.")
		return
	}
	u, err := h.opts.Connections.Connect(r.Context(), v.Identity.Principal, server)
	var state string
	if err == nil {
		if p, perr := url.Parse(u); perr == nil {
			state = p.Query().Get("state")
		}
	}
	if err != nil || state == "" {
		if err == nil {
			err = errors.New("the authorization URL carries no state")
		}
		h.showConnections(w, r, http.StatusBadGateway, "", "Could not start connecting "+text.Clip(text.OneLine(server), 100)+": "+text.Clip(text.OneLine(err.Error()), 300))
		return
	}
	// The redirect back comes from another site: a Lax cookie, sent on
	// that top-level navigation, binds it to this browser.
	http.SetCookie(w, &http.Cookie{Name: connectCookie(r), Value: state, Path: h.opts.Prefix + "/connections/callback",
		MaxAge: 900, HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// mayConnect reports whether the viewer may connect server: anybody an
// upstream of their own, an admin a shared one.
func (h *Handler) mayConnect(r *http.Request, server string) bool {
	return viewerOf(r).Identity.Admin || !h.opts.Connections.Shared(server)
}

func connectCookie(r *http.Request) string { return perGateway(r, "preflight_connect") }

// connected is where the authorization server sends the browser back. The
// page session's cookie is SameSite=Strict and does not come with that
// redirect; the connect cookie does, and must name the redirect's state.
func (h *Handler) connected(w http.ResponseWriter, r *http.Request) {
	if h.opts.Connections == nil {
		h.fail(w, r, http.StatusNotFound, "No upstream signs in with OAuth.")
		return
	}
	q := r.URL.Query()
	c, err := r.Cookie(connectCookie(r))
	if err != nil || q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(q.Get("state"))) != 1 {
		h.fail(w, r, http.StatusForbidden, "This sign-in was not started in this browser. Start it again from the Connections page.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: connectCookie(r), Path: h.opts.Prefix + "/connections/callback", MaxAge: -1,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode})
	server, err := h.opts.Connections.Connected(r.Context(), q)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "Not connected: "+text.Clip(text.OneLine(err.Error()), 300))
		return
	}
	h.render(w, r, http.StatusOK, "connected", "Connected", connectedView{Server: server})
}

// connectedView is the page shown once a sign-in is complete.
type connectedView struct{ Server string }

func (h *Handler) disconnect(w http.ResponseWriter, r *http.Request) {
	if h.opts.Connections == nil {
		h.fail(w, r, http.StatusNotFound, "No upstream signs in with OAuth.")
		return
	}
	server := r.PathValue("server")
	if !h.mayConnect(r, server) {
		h.fail(w, r, http.StatusForbidden, "Only an admin disconnects an upstream whose connection everybody shares.")
		return
	}
	if err := h.opts.Connections.Disconnect(r.Context(), viewerOf(r).Identity.Principal, server); err != nil {
		h.showConnections(w, r, http.StatusInternalServerError, "", "Not disconnected: "+text.Clip(text.OneLine(err.Error()), 300))
		return
	}
	http.Redirect(w, r, h.opts.Prefix+"/connections", http.StatusSeeOther)
}

// clientMetadata serves the gateway's client ID metadata document, which
// authorization servers fetch: public, like the gateway's name.
func (h *Handler) clientMetadata(w http.ResponseWriter, r *http.Request) {
	if h.opts.Connections == nil {
		http.NotFound(w, r)
		return
	}
	b, err := h.opts.Connections.ClientMetadata()
	if err != nil {
		http.Error(w, "no client metadata", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	_, _ = w.Write(b)
}
