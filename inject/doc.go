// Package inject fills tool parameters with resolvers that run before the
// tool body, as the MCP Python SDK's Annotated[T, Resolve(fn)] does: a
// resolver takes tool arguments by name and other resolvers' values, and
// may ask the client one question: a form for the user ([Elicit]), the
// client's model ([Sample], [SampleWithTools]) or the client's roots
// ([ListRoots]). Sampling and roots are deprecated as of protocol version
// 2026-07-28 (SEP-2577): they keep working with clients that declare them,
// but new tools should ask the user with forms and call a model provider
// or take paths as arguments themselves.
//
// # Declaring
//
// A resolver is a function of the request context and an input struct,
// made with [NewResolver]. The input struct's fields say where each input
// comes from: `arg:"path"` is the tool argument path, `inject:"confirm"` is
// the value of the resolver named confirm. A tool's own input struct marks
// its resolved parameters the same way, with `inject:"name"`; those fields
// are left out of the tool's inputSchema, and a value a client sends for
// one is ignored (the resolver wins).
//
// [AddTool] checks everything when the tool is registered and panics on
// misuse, naming the resolver and the parameter: an input with no source,
// an argument the schema does not have, a resolver that was not given, a
// type that does not fit, a cycle.
//
// A resolver that asks with [Elicit] returns an [Elicited] outcome. A
// consumer field of the outcome's type gets the whole outcome (accept,
// decline, cancel) and branches; a field of the form's type gets the
// accepted data, and a decline or cancel fails the call with a tool error
// naming the parameter and the outcome.
//
// # Running
//
// Under 2026-07-28 a call that needs answers returns input_required with
// every independent question of the round in one batch, keyed by the
// resolver's stable wire key, and a sealed requestState
// ([github.com/preflightmcp/preflight/requeststate]); the tool body runs
// only once every question is answered. Only asked outcomes travel in the
// state, each with a digest of the question as it was rendered: a stored
// outcome is used only when the resolver asks the same question again, an
// answer is accepted only for a question the previous round recorded as
// asked, and a resolver's own computed value is never stored. Under
// 2025-11-25 and older each question is a real server-to-client request
// within the one call, for chains of any depth; it waits at most
// [Options.QuestionTimeout] ([DefaultQuestionTimeout]) for the answer, and
// ends with the call (a client's cancellation; endpoint.Handler cancels a
// session's calls when the client deletes it).
//
// Asking for something the client did not declare is the JSON-RPC error
// -32021 with the exact requiredCapabilities, raised only when the question
// would really be asked.
package inject
