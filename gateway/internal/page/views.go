package page

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/approval"
	"github.com/preflightmcp/preflight/gateway/internal/audit"
	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/preflightmcp/preflight/safety"
)

// Bounds of what a page shows.
const (
	// maxRequestsShown bounds the approval requests listed.
	maxRequestsShown = 200
	// defaultAuditRows and maxAuditRows bound the audit records listed.
	defaultAuditRows = 100
	maxAuditRows     = 1000
)

// errorView is the error page's data.
type errorView struct {
	Status  int
	Message string
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", http.StatusText(status), errorView{Status: status, Message: msg})
}

// requestView is one approval request as listed.
type requestView struct {
	*approval.Request
	// MayDecide reports that the viewer may approve or deny it now.
	MayDecide bool
}

// pendingView lists the viewer's pending requests.
type pendingView struct {
	Requests []requestView
	Error    string
}

// pending returns the viewer's requests, pending ones only if onlyPending.
func (h *Handler) requests(r *http.Request, onlyPending bool) pendingView {
	if h.opts.Approvals == nil {
		return pendingView{}
	}
	v := viewerOf(r)
	list, err := h.opts.Approvals.List(r.Context(), v.Identity.Principal, maxRequestsShown)
	if err != nil {
		h.opts.Logger.Warn("page: approvals unavailable", "err", err)
		return pendingView{Error: "The approvals could not be read; try again shortly."}
	}
	var out pendingView
	for _, q := range list {
		if onlyPending && q.State != approval.Pending {
			continue
		}
		out.Requests = append(out.Requests, requestView{Request: q,
			MayDecide: q.State == approval.Pending && h.opts.Approvals.MayDecide(v.Identity.Principal, q)})
	}
	if onlyPending { // oldest first: the longest waiting on top
		slices.Reverse(out.Requests)
	}
	return out
}

// dashboardView is the front page's data.
type dashboardView struct {
	Pending     pendingView
	Chart       *chartView
	ChartError  string
	Quarantined int
	HasAudit    bool
}

func (h *Handler) dashboard(w http.ResponseWriter, r *http.Request) {
	d := dashboardView{Pending: h.requests(r, true), HasAudit: h.opts.Audit != nil}
	if h.opts.Audit != nil {
		c, err := h.chart(r)
		if err != nil {
			h.opts.Logger.Warn("page: audit log unavailable", "err", err)
			d.ChartError = "The audit log could not be read; try again shortly."
		}
		d.Chart = c
	}
	if h.opts.Pins != nil {
		if pins, err := h.opts.Pins.Pins(r.Context()); err == nil {
			for _, p := range pins {
				if p.Quarantined {
					d.Quarantined++
				}
			}
		}
	}
	h.render(w, r, http.StatusOK, "dashboard", "Pending approvals", d)
}

func (h *Handler) pendingFragment(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "pending", "", dashboardView{Pending: h.requests(r, true)})
}

func (h *Handler) approvals(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "approvals", "Approvals", h.requests(r, false))
}

// approvalView is one request's page.
type approvalView struct {
	requestView
	Link    string
	Message string
}

func (h *Handler) approval(w http.ResponseWriter, r *http.Request) {
	h.showRequest(w, r, http.StatusOK, r.PathValue("id"), "")
}

func (h *Handler) showRequest(w http.ResponseWriter, r *http.Request, status int, id, msg string) {
	if h.opts.Approvals == nil {
		h.fail(w, r, http.StatusNotFound, "This gateway holds no approvals.")
		return
	}
	v := viewerOf(r)
	q, err := h.opts.Approvals.Get(r.Context(), id, v.Identity.Principal)
	switch {
	case errors.Is(err, approval.ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "There is no such approval request for you: it may have been forgotten after it lapsed, "+
			"belong to another principal, or the address may be mistyped.")
		return
	case err != nil:
		h.opts.Logger.Warn("page: approvals unavailable", "err", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The approvals could not be read; try again shortly.")
		return
	}
	rv := requestView{Request: q, MayDecide: q.State == approval.Pending && h.opts.Approvals.MayDecide(v.Identity.Principal, q)}
	h.render(w, r, status, "approval", "Approval request", approvalView{requestView: rv, Message: msg})
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	id, verb := r.PathValue("id"), r.PathValue("verb")
	if h.opts.Approvals == nil || (verb != "approve" && verb != "deny") {
		h.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	v := viewerOf(r)
	by := approval.Approver{Principal: v.Identity.Principal, Name: v.Identity.Display()}
	decide := h.opts.Approvals.Approve
	if verb == "deny" {
		decide = h.opts.Approvals.Deny
	}
	q, err := decide(r.Context(), id, by)
	switch {
	case err == nil:
		http.Redirect(w, r, h.opts.Prefix+"/approvals/"+q.ID, http.StatusSeeOther)
	case errors.Is(err, approval.ErrNotFound), errors.Is(err, approval.ErrForbidden):
		// Another principal's request is not disclosed.
		h.fail(w, r, http.StatusNotFound, "There is no such approval request for you.")
	case errors.Is(err, approval.ErrNotPending):
		h.showRequest(w, r, http.StatusConflict, id, "Nothing changed: this request is no longer pending.")
	case errors.Is(err, approval.ErrNotShowable):
		h.showRequest(w, r, http.StatusConflict, id, "Not approved: this request's arguments are not shown whole, so it cannot be approved here. Deny it, or let it lapse.")
	default:
		h.opts.Logger.Warn("page: decision not recorded", "err", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The decision could not be recorded; try again shortly.")
	}
}

// auditView is the audit log's data.
type auditView struct {
	Query     map[string]string
	Records   []*audit.Record
	Error     string
	Limit     int
	More      bool
	Principal string // fixed for a viewer who is not an admin
	Effects   []string
	Decisions []audit.Decision
	Outcomes  []audit.Outcome
	Chart     *chartView
	Missing   bool
}

// auditKeys are the filter fields the form has.
var auditKeys = []string{"since", "until", "principal", "server", "tool", "effect", "decision", "outcome", "limit", "order"}

func (h *Handler) audit(w http.ResponseWriter, r *http.Request) {
	av := auditView{Query: map[string]string{}, Effects: []string{"read", "write", "external", "delete"},
		Decisions: audit.Decisions(), Outcomes: audit.Outcomes()}
	if h.opts.Audit == nil {
		av.Missing = true
		h.render(w, r, http.StatusOK, "audit", "Audit log", av)
		return
	}
	q := r.URL.Query()
	for k, vs := range q { // empty fields of the form are no filter
		if len(vs) == 1 && vs[0] == "" {
			delete(q, k)
		}
	}
	for _, k := range auditKeys {
		av.Query[k] = q.Get(k)
	}
	v := viewerOf(r)
	f, err := audit.ParseFilter(q, time.Now())
	if err != nil {
		av.Error = err.Error()
		h.render(w, r, http.StatusBadRequest, "audit", "Audit log", av)
		return
	}
	if !v.Identity.Admin {
		f.Principal, av.Principal = v.Identity.Principal, v.Identity.Display()
	}
	if f.Limit <= 0 {
		f.Limit = defaultAuditRows
	}
	f.Limit = min(f.Limit, maxAuditRows)
	av.Limit = f.Limit
	if q.Get("order") == "" {
		f.Newest = true
	}
	f.Limit++ // one more tells there are more
	for rec, err := range h.opts.Audit.Query(r.Context(), f) {
		if err != nil {
			h.opts.Logger.Warn("page: audit log unavailable", "err", err)
			av.Error = "The audit log could not be read; try again shortly."
			break
		}
		av.Records = append(av.Records, rec)
	}
	if len(av.Records) > av.Limit {
		av.Records, av.More = av.Records[:av.Limit], true
	}
	h.render(w, r, http.StatusOK, "audit", "Audit log", av)
}

// toolsView is the safety tables' data.
type toolsView struct {
	Tables  []*safety.Table
	Columns []string
	Error   string
	Missing bool
}

func (h *Handler) tools(w http.ResponseWriter, r *http.Request) {
	tv := toolsView{Columns: safety.Columns, Missing: h.opts.Safety == nil}
	if h.opts.Safety != nil {
		tables, err := h.opts.Safety.SafetyTables(r.Context())
		if err != nil {
			h.opts.Logger.Warn("page: safety tables unavailable", "err", err)
			tv.Error = "The tools could not be listed; try again shortly."
		}
		tv.Tables = tables
	}
	h.render(w, r, http.StatusOK, "tools", "Tools", tv)
}

// pinsView is the pins' data.
type pinsView struct {
	Pins    []Pin
	Error   string
	Missing bool
	Admin   bool
	Message string
}

func (h *Handler) pins(w http.ResponseWriter, r *http.Request) {
	h.showPins(w, r, http.StatusOK, "")
}

func (h *Handler) showPins(w http.ResponseWriter, r *http.Request, status int, msg string) {
	pv := pinsView{Missing: h.opts.Pins == nil, Admin: viewerOf(r).Identity.Admin, Message: msg}
	if h.opts.Pins != nil {
		pins, err := h.opts.Pins.Pins(r.Context())
		if err != nil {
			h.opts.Logger.Warn("page: pins unavailable", "err", err)
			pv.Error = "The pins could not be read; try again shortly."
		}
		pins = slices.Clone(pins)
		slices.SortStableFunc(pins, func(a, b Pin) int { // quarantined first
			switch {
			case a.Quarantined == b.Quarantined:
				return 0
			case a.Quarantined:
				return -1
			}
			return 1
		})
		pv.Pins = pins
	}
	h.render(w, r, status, "pins", "Pinned tools", pv)
}

func (h *Handler) approvePin(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r)
	if h.opts.Pins == nil {
		h.fail(w, r, http.StatusNotFound, "Pinning is off.")
		return
	}
	if !v.Identity.Admin {
		h.fail(w, r, http.StatusForbidden, "Only an admin approves a changed tool definition.")
		return
	}
	f := r.PostForm
	server, tool, candidate := f.Get("server"), f.Get("tool"), f.Get("candidate")
	if server == "" || tool == "" || candidate == "" {
		h.fail(w, r, http.StatusBadRequest, "The form names no tool definition.")
		return
	}
	if err := h.opts.Pins.ApprovePin(r.Context(), server, tool, candidate, v.Identity); err != nil {
		h.opts.Logger.Warn("page: pin not approved", "server", server, "tool", tool, "err", err)
		h.showPins(w, r, http.StatusConflict, "Not approved: "+text.Clip(err.Error(), 300))
		return
	}
	http.Redirect(w, r, h.opts.Prefix+"/pins", http.StatusSeeOther)
}
