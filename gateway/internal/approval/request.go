package approval

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"time"

	"github.com/preflightmcp/preflight/hints"
)

// State is where a request stands.
type State string

// States. A request starts Pending; a person makes it Approved or Denied;
// the call's retry makes an approval Used. A pending or approved request
// whose time ran out reads as Expired.
const (
	Pending  State = "pending"
	Approved State = "approved"
	Denied   State = "denied"
	Expired  State = "expired"
	Used     State = "used"
)

// Open reports whether a request in state s still decides its call's
// retries: pending, approved or denied.
func (s State) Open() bool { return s == Pending || s == Approved || s == Denied }

// Key is what binds a request to a call: the same principal calling the
// same tool of the same server with arguments of the same digest.
type Key struct {
	Principal string `json:"principal"`
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	// ArgsDigest is requeststate.ArgumentsDigest of the arguments.
	ArgsDigest string `json:"argsDigest"`
}

// Approver is who decided a request.
type Approver struct {
	// Principal is the approver's principal, as the gateway names
	// principals ("" for the operator of a gateway that authenticates
	// nobody).
	Principal string `json:"principal"`
	// Name is how the approver is shown and audited; "" means Principal.
	Name string `json:"name,omitempty"`
}

// String is the approver's name, their principal when unnamed, and
// "operator" for the unnamed empty principal.
func (a Approver) String() string {
	switch {
	case a.Name != "":
		return a.Name
	case a.Principal != "":
		return a.Principal
	}
	return "operator"
}

// Arg is one argument as the approver sees it.
type Arg struct {
	Name string `json:"name"`
	// Value is the value: a string as is, anything else as compact JSON,
	// control and bidirectional characters escaped; whole on the page
	// (Show), cut to a bound in a preview (Clipped then reports it).
	Value   string `json:"value,omitempty"`
	Clipped bool   `json:"clipped,omitempty"`
	// Withheld reports a sensitive argument whose value is not shown.
	Withheld bool `json:"withheld,omitempty"`
	// Secrets are the kinds of the values that look like secrets,
	// withheld in the name or value as "[REDACTED:kind]".
	Secrets []string `json:"secrets,omitempty"`
}

// Request is a call waiting for, or decided by, a person.
type Request struct {
	// ID names the request: 128 random bits in base64url, unguessable.
	ID string `json:"id"`
	Key
	// Effect is the call's effect and Reason why it is asked, in words.
	Effect hints.Effect `json:"effect,omitempty"`
	Reason string       `json:"reason,omitempty"`
	// Args shows the arguments, those that matter first, each whole;
	// ArgsOmitted counts any left out (none since they are shown whole).
	Args        []Arg `json:"args,omitempty"`
	ArgsOmitted int   `json:"argsOmitted,omitempty"`

	State State `json:"state"`
	// Created is when the call asked. Expires is when a pending request
	// lapses, or an approval that was not used.
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// DecidedBy and Decided say who decided and when; zero while
	// pending.
	DecidedBy Approver  `json:"decidedBy,omitzero"`
	Decided   time.Time `json:"decided,omitzero"`
	// UsedAt is when the retry consumed the approval.
	UsedAt time.Time `json:"usedAt,omitzero"`
}

// Whole reports whether r shows every argument whole: nothing cut, none
// left out. Only such a request can be approved.
func (r *Request) Whole() bool {
	if r.ArgsOmitted > 0 {
		return false
	}
	for _, a := range r.Args {
		if a.Clipped {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of r.
func (r *Request) Clone() *Request {
	c := *r
	c.Args = slices.Clone(r.Args)
	return &c
}

// At returns r's state at time now: a pending or approved request past
// its expiry is Expired.
func (r *Request) At(now time.Time) State {
	if (r.State == Pending || r.State == Approved) && !now.Before(r.Expires) {
		return Expired
	}
	return r.State
}

// idBytes is the randomness of an id; idLen its encoded length.
const (
	idBytes = 16
	idLen   = 22
)

// newID returns a fresh random id.
func newID() string {
	var b [idBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether s has the form of a request id. Anything else
// (from a URL, a form or a requestState) is unknown without asking the
// store.
func ValidID(s string) bool {
	if len(s) != idLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}
