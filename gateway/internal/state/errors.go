package state

import (
	"context"
	"errors"
	"fmt"

	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Errors the stores return. Each error a store returns that is not the
// caller's own cancellation matches one of them with errors.Is. A gateway
// treats every error from [Nonces] as a refusal: it never lets a call
// through because the state could not be checked.
var (
	// ErrUnavailable: the shared store could not be reached or refused
	// the command. Returned errors are [*UnavailableError]s.
	ErrUnavailable = errors.New("shared state unavailable")
	// ErrFull: an in-process store reached its bound with unexpired
	// entries, and refuses rather than forget one.
	ErrFull = errors.New("state: store full")
	// ErrStaleEpoch: the nonce was issued under an earlier epoch; the
	// store may have forgotten whether it was used.
	ErrStaleEpoch = errors.New("state: nonce from an earlier epoch")
	// ErrInvalid: a malformed nonce, a bad limit, an empty or too long
	// key, topic or payload. A programming error, or input to refuse.
	ErrInvalid = errors.New("state: invalid argument")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("state: store closed")
)

// UnavailableError says that the shared store could not serve an
// operation, where it is and what the gateway does meanwhile.
type UnavailableError struct {
	// Addr is where the store is, such as 127.0.0.1:6379.
	Addr string
	// Op is what failed: "nonce", "epoch", "limit", "publish",
	// "subscribe".
	Op string
	// Err is the cause, from the Redis client.
	Err error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("shared state (Redis at %s) unavailable: %s; %s", e.Addr, text.Clip(text.OneLine(e.Err.Error()), 200), consequence(e.Op))
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func consequence(op string) string {
	switch op {
	case "nonce", "epoch":
		return "single-use confirmations fail closed until it is back"
	case "limit":
		return "rate-limited calls are refused until it is back"
	case "flow":
		return "calls that may carry values read from another server are confirmed or denied until it is back"
	default:
		return "calls waiting on another replica are not released until it is back"
	}
}

// unavailable wraps err from a Redis command, unless the caller's own
// context ended it.
func unavailable(ctx context.Context, addr, op string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("state: %s: %w", op, ctx.Err())
	}
	return &UnavailableError{Addr: addr, Op: op, Err: err}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
