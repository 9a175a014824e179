// Package rounds drives MCP multi round-trip requests (MRTR, protocol
// 2026-07-28) for Go clients built on the official Go SDK.
//
// Under 2026-07-28 a server that needs something from the client in the
// middle of tools/call, prompts/get or resources/read does not send a
// request of its own: it answers resultType "input_required" with
// inputRequests (key -> elicitation/create, sampling/createMessage or
// roots/list) and an opaque requestState, and the client retries the same
// method and arguments with a new request id, inputResponses under the same
// keys and the requestState echoed byte for byte. An input_required result
// with no questions and only state means "retry later" (load shedding).
//
// [NewClient] returns an ordinary [*mcp.Client] whose tools/call,
// prompts/get and resources/read run that loop inside a sending middleware:
// the caller of [mcp.ClientSession.CallTool] (or GetPrompt, ReadResource)
// gets the final result, as if the server had asked mid-call the legacy way.
// For each round the middleware
//
//   - answers every question of the round concurrently, with the very
//     handlers the client uses for legacy server-to-client requests
//     ([mcp.ClientOptions.ElicitationHandler],
//     [mcp.ClientOptions.CreateMessageHandler] or
//     [mcp.ClientOptions.CreateMessageWithToolsHandler], and the client's
//     roots), through the SDK's own receiving path, so an elicitation answer
//     is checked against the requested schema exactly as a legacy one is;
//   - retries with a new request (the SDK gives it a new JSON-RPC id) whose
//     params are a copy of the caller's, carrying the answers under the
//     server's keys and the requestState exactly as received; the caller's
//     params are never modified;
//   - backs off briefly before retrying a round that carried only state
//     ([Options.Backoff], 50ms doubling up to 1s by default, bounded by the
//     context; [Options.Sleep] makes the waiting injectable);
//   - gives up after [Options.MaxRounds] requests (10 by default) with a
//     [*RoundsError] naming the call and the keys still being asked.
//
// Every question of a round is checked before any is shown to anyone: a
// question the client has no handler for fails the call at once with an
// [*InputError] wrapping [ErrNoHandler] that names the missing
// [mcp.ClientOptions] field, rather than a hang or a bare JSON-RPC error.
// A handler's error is an [*InputError] naming the key and the method, and
// cancels the context of the round's other handlers. A handler can learn
// which key it is answering with [InputKey].
//
// On a legacy (2025-11-25 and older) session nothing changes: those servers
// ask with real requests, which reach the same handlers, and never answer
// input_required.
//
// # Roots
//
// The SDK answers roots/list from the roots added with [mcp.Client.AddRoots].
// A sending middleware has no way to read that set, so [NewClient] captures
// the SDK's own receiving handler when it builds the client (with a receiving
// middleware installed first) and asks it: roots/list questions in rounds
// are answered from exactly the roots a legacy roots/list request would get,
// including those added or removed later with AddRoots and RemoveRoots.
// [Options.Roots] is a convenience: NewClient adds those roots to the client
// with AddRoots, so both eras see them. Roots and sampling are deprecated as
// of protocol version 2026-07-28 (SEP-2577); the client answers them for as
// long as servers ask.
//
// # Compared with the SDK's built-in loop
//
// The SDK client (mcp/mrtr.go) runs a similar loop by default; NewClient
// turns it off ([mcp.MultiRoundTripOptions.Disabled]) and installs this one
// instead. The differences, and the reasons to prefer this package:
//
//   - the SDK retries state-only rounds at once, with no back-off, and gives
//     up after three of them; here they wait (50ms, 100ms, ... 1s) and count
//     against the same, configurable round bound;
//   - the SDK's bound is fixed at 10 calls and its errors are terse
//     ("multi-round-trip: exceeded maximum retries (10)"); here the bound is
//     an option and [*RoundsError] says which tool, prompt or resource, how
//     many rounds and which keys were still asked;
//   - a missing handler is, in the SDK, the error a legacy server would get
//     ("client does not support elicitation"), found while the round's other
//     handlers are already running (a user may be looking at a form); here
//     all questions are checked before any handler runs and the error names
//     the missing option;
//   - errors are typed ([*RoundsError], [*InputError], [ErrNoHandler],
//     [ErrUnknownInputMethod]) so a user interface can tell them apart;
//   - handlers can see their key ([InputKey]).
//
// Middleware added to the client later with [mcp.Client.AddSendingMiddleware]
// sees each call once, with its final result; middleware added with
// [mcp.Client.AddReceivingMiddleware] sees legacy server-to-client requests
// but not the questions of rounds (nor does it with the SDK's loop).
//
// A question whose method the client does not know (anything but the three
// above) makes the SDK fail to decode the whole result; that failure is
// returned wrapped with [ErrUnknownInputMethod] and the call's name.
package rounds
