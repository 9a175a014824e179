package rounds

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoHandler is wrapped by the [*InputError] of a question the client has
// no handler for, such as an elicitation without
// [mcp.ClientOptions.ElicitationHandler]. The error's text names the
// missing option.
var ErrNoHandler = errors.New("the client has no handler for this input request")

// ErrUnknownInputMethod is wrapped by the error of a call whose server
// asked a question with a method other than elicitation/create,
// sampling/createMessage and roots/list.
var ErrUnknownInputMethod = errors.New("the server asked with an input request method this client does not know")

// RoundsError is returned when a call is still answered input_required
// after [Options.MaxRounds] requests.
type RoundsError struct {
	Method  string   // tools/call, prompts/get or resources/read
	Name    string   // the tool or prompt name, or the resource URI
	Rounds  int      // requests sent
	Pending []string // keys asked by the last result, sorted; empty if it asked only to retry later
}

func (e *RoundsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rounds: %s %q: gave up after %d rounds: ", e.Method, e.Name, e.Rounds)
	if len(e.Pending) == 0 {
		b.WriteString("the server still asked to retry later (input_required with no input requests)")
	} else {
		fmt.Fprintf(&b, "the server still asked for input %q", e.Pending)
	}
	return b.String()
}

// InputError reports a question of a round that the client could not
// answer: a handler's error, a missing handler ([ErrNoHandler]) or an
// unknown method ([ErrUnknownInputMethod]).
type InputError struct {
	Method      string // the call: tools/call, prompts/get or resources/read
	Name        string // the tool or prompt name, or the resource URI
	Key         string // the input request's key
	InputMethod string // elicitation/create, sampling/createMessage, roots/list, or "" if unknown
	Err         error
}

func (e *InputError) Error() string {
	m := e.InputMethod
	if m == "" {
		m = "unknown method"
	}
	return fmt.Sprintf("rounds: %s %q: input request %q (%s): %v", e.Method, e.Name, e.Key, m, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }
