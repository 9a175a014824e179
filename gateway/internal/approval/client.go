package approval

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// InputKey is the key of the gateway's approval in a result's
// inputRequests, namespaced so that it cannot collide with an upstream's.
const InputKey = "preflight.approval"

// SupportsURL reports whether a client's capabilities, as declared on the
// request at hand, include URL-mode elicitation.
func SupportsURL(caps *mcp.ClientCapabilities) bool {
	return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// Link returns the page's address of request id: base, the page's root (an
// absolute http or https URL with no user, query or fragment), joined with
// approvals/ and the id. The id is all it carries: no credential, no
// personal data; whoever opens it must sign in to the page.
func Link(base, id string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("approval page address: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return "", errors.New("approval page address: want an absolute http or https URL")
	case u.User != nil, u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return "", errors.New("approval page address: want no user, query or fragment")
	}
	if !ValidID(id) {
		return "", ErrNotFound
	}
	return u.JoinPath("approvals", id).String(), nil
}

// what names the call of r for a person: tool on server.
func what(r *Request) string {
	s := firstClean(r.Tool, 128) + " on " + firstClean(r.Server, 128)
	if r.Reason != "" {
		s += " (" + firstClean(r.Reason, maxReasonBytes) + ")"
	}
	return s
}

// URLElicitation returns the URL-mode elicitation of 2026-07-28 for a
// pending request, to send in input_required under [InputKey]:
// {"method":"elicitation/create","params":{"mode":"url","url":...,
// "message":...}}. An "accept" only means the user agreed to open the
// page; the gateway learns the decision from the store when the client
// retries with its requestState ([Service.Resume]).
func URLElicitation(base string, r *Request) (*mcp.ElicitParams, error) {
	link, err := Link(base, r.ID)
	if err != nil {
		return nil, err
	}
	return &mcp.ElicitParams{
		Mode: "url",
		URL:  link,
		Message: "This call needs a person's approval before it runs: " + what(r) +
			". Open the page, sign in, and approve or deny it; the call continues once it is decided.",
	}, nil
}

// LegacyURLElicitation returns the URL-mode elicitation of 2025-11-25 for
// a pending request: URLElicitation's with the request's id as its
// elicitationId, for a mid-call elicitation/create or a -32042 error, and
// for notifications/elicitation/complete once it is decided.
func LegacyURLElicitation(base string, r *Request) (*mcp.ElicitParams, error) {
	p, err := URLElicitation(base, r)
	if err != nil {
		return nil, err
	}
	p.ElicitationID = r.ID
	return p, nil
}

// RetryText is the tool error for a client that cannot be asked: the call
// was not run, where to approve it, and that the retry with the same
// arguments runs it once it is approved.
func RetryText(base string, r *Request) (string, error) {
	link, err := Link(base, r.ID)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Not run: this call needs a person's approval: %s. "+
		"Ask the user to approve it at %s (signing in to the preflight page), then retry the call with exactly "+
		"the same arguments. The approval allows one call; the request lapses at %s if nobody decides it.",
		what(r), link, r.Expires.UTC().Format(time.RFC3339)), nil
}

// OutcomeText says why a call whose request is not (or no longer)
// approved was not run: denied, expired, or still pending. The upstream
// was not called.
func OutcomeText(r *Request) string {
	var b strings.Builder
	b.WriteString("Not run: " + what(r) + " ")
	switch r.State {
	case Denied:
		b.WriteString("was denied on the approval page")
		if !r.Decided.IsZero() {
			b.WriteString(" at " + r.Decided.UTC().Format(time.RFC3339))
		}
		b.WriteString(". Do not retry it unless the user asks")
	case Expired:
		if r.Decided.IsZero() {
			b.WriteString("was not decided in time: the approval request expired")
		} else {
			b.WriteString("was approved, but the approval lapsed before the call was retried")
		}
		b.WriteString(". Retrying it asks for approval again")
	case Used:
		b.WriteString("was approved once and that approval was used. Retrying it asks for approval again")
	default:
		b.WriteString("is still waiting for a person's approval")
	}
	b.WriteString(". The server was not called.")
	return b.String()
}
