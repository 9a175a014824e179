// Package rules resolves each call the gateway forwards: the effective
// annotations and mcp.dev/ policy hints of one tool call, with where each
// came from, for every upstream, whether or not it serves tools/resolve.
//
// The sources, in order of precedence:
//
//   - Overrides: a deployer's fixed annotations and hints for a tool
//     (trusted configuration). They win over everything below, and an
//     override that calls a tool mutating keeps every other source from
//     calling it read-only.
//   - Deployer rules: CEL expressions over the tool's name, its arguments
//     (args), the gateway's name for the upstream (server) and the caller
//     (principal), each mapping the calls it matches to annotations and
//     hints. Tried in the order written; the first that matches decides.
//   - The upstream's own tools/resolve (either shape), when it serves it.
//     Its answer is checked against the tool's static declaration: an
//     answer riskier than that declaration is inconsistent, and the more
//     cautious of the two is used. An untrusted upstream's annotations and
//     hints, static and resolved, can only add caution to the protocol's
//     conservative defaults.
//   - Pack rules: the rules shipped with the project for popular servers
//     (package pack), for upstreams that do not resolve their tools
//     themselves. Tried in order, first match decides.
//   - The static declaration, when nothing above answered.
//
// Rules are compiled once, by [Compile], and checked against a tool's
// input schema when the tool is known ([Rules.SetTools]): a rule that reads
// an argument the tool does not have, or compares an argument with a
// value outside its enum or of another type, is an [*Error] naming the
// rule, the tool and the argument, and the tool then resolves to its
// static declaration. A rule's annotations and hints are laid over the
// tool's static ones, so a rule says only what differs.
//
// A rule whose evaluation fails (it read an argument the client left out,
// say) stops the search and the call resolves to its static declaration,
// never to a later, possibly less cautious, rule. Read optional arguments
// with has(args.x) or args.?x.orValue(default).
//
// The gateway calls [Rules.Resolve] once per tools/call and tools/resolve;
// [Result.NeedsConfirmation] and [Result.Resolution] give what it acts on
// and what it answers.
package rules
