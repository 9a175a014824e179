package requeststate

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrInvalid is matched (with errors.Is) by every error that [Ring.Open]
// and [Ring.OpenRequest] return for a token they refuse.
var ErrInvalid = errors.New("requeststate: invalid request state")

// The wire error that every refused requestState gets; see [WireError].
const (
	WireCode    = jsonrpc.CodeInvalidParams // -32602
	WireMessage = "Invalid or expired requestState"
)

// A Reason says why a token was refused. It belongs in the server log and
// never on the wire.
type Reason string

// The reasons of [Error].
const (
	ReasonMalformed   Reason = "malformed"       // not a token: bad characters or base64, too short, too long
	ReasonVersion     Reason = "unknown version" // the version byte is not TokenVersion
	ReasonUnknownKey  Reason = "unknown key"     // no key of the ring has the token's key ID
	ReasonTampered    Reason = "tampered"        // authentication failed: modified, or sealed under another secret
	ReasonExpired     Reason = "expired"         // past its expiry plus the skew allowance
	ReasonNotYetValid Reason = "not yet valid"   // issued later than now plus the skew allowance
	ReasonMethod      Reason = "other method"    // sealed for another method
	ReasonTarget      Reason = "other target"    // sealed for another tool, prompt or resource
	ReasonArguments   Reason = "other arguments" // sealed for other arguments (or they have no digest)
	ReasonAudience    Reason = "other audience"  // sealed by or for another server
	ReasonPrincipal   Reason = "other principal" // sealed for another authenticated principal
)

// Error is the error of a refused token. It matches [ErrInvalid].
type Error struct {
	Reason Reason
	// Detail adds facts for the log (times, names); it never contains
	// secrets, payloads or principals.
	Detail string
}

func (e *Error) Error() string {
	s := "requeststate: invalid request state: " + string(e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns [ErrInvalid].
func (e *Error) Unwrap() error { return ErrInvalid }

// ReasonOf returns the [Reason] of err if it is or wraps an [Error], and ""
// otherwise.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// WireError converts any error about a requestState into the one error that
// goes on the wire: a *jsonrpc.Error with code -32602 and message "Invalid
// or expired requestState", without the reason. It returns nil for nil.
//
// Returning it from a typed tool handler (mcp.AddTool), a raw tool handler,
// a prompt handler or a resource handler makes the SDK answer with this
// JSON-RPC error. Log the original error first.
func WireError(err error) error {
	if err == nil {
		return nil
	}
	return &jsonrpc.Error{Code: WireCode, Message: WireMessage}
}
