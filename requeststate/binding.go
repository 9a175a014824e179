package requeststate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The methods that may answer input_required, the only ones a token can be
// bound to.
const (
	MethodCallTool     = "tools/call"
	MethodGetPrompt    = "prompts/get"
	MethodReadResource = "resources/read"
)

// methodCode is the claims byte of a method; 0 for any other.
func methodCode(m string) byte {
	switch m {
	case MethodCallTool:
		return 1
	case MethodGetPrompt:
		return 2
	case MethodReadResource:
		return 3
	}
	return 0
}

func methodName(c byte) string {
	switch c {
	case 1:
		return MethodCallTool
	case 2:
		return MethodGetPrompt
	case 3:
		return MethodReadResource
	}
	return ""
}

// A Binding is what a token is sealed for; [Ring.Open] refuses the token
// for any other. [BindingFor] builds it from an SDK request.
type Binding struct {
	// Method is MethodCallTool, MethodGetPrompt or MethodReadResource.
	Method string
	// Target is the tool name, the prompt name or the resource URI. It
	// may not be empty.
	Target string
	// Arguments is the digest of the request's arguments from
	// [ArgumentsDigest], or "" for a request without arguments
	// (resources/read). It holds no inputResponses nor requestState.
	Arguments string
	// Audience names the server (its implementation name, say), so that
	// servers sharing keys cannot use each other's state. It may not be
	// empty.
	Audience string
	// Principal identifies the authenticated user, "" when the request is
	// not authenticated.
	Principal string
}

func (b Binding) check() (byte, error) {
	code := methodCode(b.Method)
	switch {
	case code == 0:
		return 0, fmt.Errorf("requeststate: cannot bind to method %q: only tools/call, prompts/get and resources/read answer input_required", b.Method)
	case b.Target == "":
		return 0, errors.New("requeststate: binding without a target (tool name, prompt name or resource URI)")
	case b.Audience == "":
		return 0, errors.New("requeststate: binding without an audience (the server's name)")
	}
	return code, nil
}

// BindingFor returns the binding of an SDK server request:
//
//   - *mcp.CallToolRequest: tools/call, the tool name and the digest of
//     Params.Arguments (the raw JSON, digested canonically);
//   - *mcp.GetPromptRequest: prompts/get, the prompt name and the digest of
//     Params.Arguments;
//   - *mcp.ReadResourceRequest: resources/read, Params.URI and no arguments.
//
// Absent arguments digest like {}. Params.InputResponses and
// Params.RequestState are not part of the binding, so the first request and
// its retries have the same one. The principal is
// req.GetExtra().TokenInfo.UserID when there is one, and "" otherwise.
//
// BindingFor fails for any other request, for nil params, and for
// arguments that [ArgumentsDigest] refuses.
func BindingFor(req mcp.Request, audience string) (Binding, error) {
	b := Binding{Audience: audience}
	var args any
	switch req := req.(type) {
	case *mcp.CallToolRequest:
		if req == nil || req.Params == nil {
			return Binding{}, errors.New("requeststate: tools/call request without params")
		}
		b.Method, b.Target, args = MethodCallTool, req.Params.Name, json.RawMessage(req.Params.Arguments)
	case *mcp.GetPromptRequest:
		if req == nil || req.Params == nil {
			return Binding{}, errors.New("requeststate: prompts/get request without params")
		}
		b.Method, b.Target = MethodGetPrompt, req.Params.Name
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
	case *mcp.ReadResourceRequest:
		if req == nil || req.Params == nil {
			return Binding{}, errors.New("requeststate: resources/read request without params")
		}
		b.Method, b.Target = MethodReadResource, req.Params.URI
	default:
		return Binding{}, fmt.Errorf("requeststate: cannot bind a %T: only tools/call, prompts/get and resources/read answer input_required", req)
	}
	if b.Method != MethodReadResource {
		d, err := ArgumentsDigest(args)
		if err != nil {
			return Binding{}, fmt.Errorf("requeststate: %s %q: %w", b.Method, b.Target, err)
		}
		b.Arguments = d
	}
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		b.Principal = extra.TokenInfo.UserID
	}
	return b, nil
}

// RequestStateOf returns the requestState that req carries, "" if none or
// if req is not a tools/call, prompts/get or resources/read request.
func RequestStateOf(req mcp.Request) string {
	switch req := req.(type) {
	case *mcp.CallToolRequest:
		if req != nil && req.Params != nil {
			return req.Params.RequestState
		}
	case *mcp.GetPromptRequest:
		if req != nil && req.Params != nil {
			return req.Params.RequestState
		}
	case *mcp.ReadResourceRequest:
		if req != nil && req.Params != nil {
			return req.Params.RequestState
		}
	}
	return ""
}

// SealRequest seals payload for req: Seal with [BindingFor](req, audience).
// Put the token in the result's RequestState.
func (r *Ring) SealRequest(req mcp.Request, audience string, payload []byte) (string, error) {
	b, err := BindingFor(req, audience)
	if err != nil {
		return "", err
	}
	return r.Seal(b, payload)
}

// OpenRequest opens the requestState that req carries, bound to
// [BindingFor](req, audience). It returns (nil, nil) when req carries no
// requestState (a first round: start over), and a non-nil payload
// otherwise. Any error matches [ErrInvalid] unless req is of a kind
// BindingFor does not know; answer the client with [WireError] of it.
func (r *Ring) OpenRequest(req mcp.Request, audience string) ([]byte, error) {
	token := RequestStateOf(req)
	if token == "" {
		switch req.(type) {
		case *mcp.CallToolRequest, *mcp.GetPromptRequest, *mcp.ReadResourceRequest:
			return nil, nil
		}
		return nil, fmt.Errorf("requeststate: cannot open the state of a %T: only tools/call, prompts/get and resources/read carry one", req)
	}
	b, err := BindingFor(req, audience)
	if err != nil {
		// The token cannot be for arguments that have no digest.
		return nil, &Error{Reason: ReasonArguments, Detail: err.Error()}
	}
	return r.Open(token, b)
}
