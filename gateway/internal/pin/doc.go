// Package pin pins the tool definitions upstream MCP servers serve, so
// that a tool cannot change what it says it does behind the gateway's back
// (a "rug pull"): a description that starts instructing the model, or a
// tool that silently stops being destructive, which would bypass every
// decision made from its annotations.
//
// The first definition of each tool a server lists is pinned ([Define]:
// name, title, description, input and output schemas, annotations and the
// policy-hint _meta keys, fingerprinted over canonical JSON). A later
// definition with another fingerprint is compared field by field
// ([Compare]) and, by the server's [Mode]:
//
//   - strict: the tool is quarantined: listed as its pinned definition
//     with a description that says so ([Quarantined]), and calls are
//     refused with a [*QuarantinedError] naming what changed and how to
//     approve it;
//   - warn: a change that removes caution (destructiveHint true to false,
//     readOnlyHint false to true, effect delete to read, confirmation no
//     longer required) is quarantined as in strict mode; one that only adds
//     caution is accepted and becomes the pin; any other is logged and the
//     tool stays listed as served and callable;
//   - off: nothing is pinned.
//
// A quarantined or changed tool waits until someone approves the new
// definition by its fingerprint ([Pinner.Approve]; the gateway's page
// through package gateway/pin/pinpage, or "preflight pins approve"). A
// gateway calls [Pinner.Check] on every upstream tools/list and
// [Pinner.Allowed] before every tools/call.
//
// Pins live in a [Store]: [MemoryStore] for one process, or the SQLite
// (embedded default) and PostgreSQL (shared by replicas) stores of package
// gateway/pin/sqlstore.
//
// The design and its reasons are in docs/pins.md.
package pin
