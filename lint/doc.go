// Package lint checks the tool metadata of an MCP server, for CI: tool
// names, descriptions and input schemas, the standard annotations, the
// mcp.dev/ policy hints of seed 002, and tool resolution (tools/resolve) in
// both of its shapes.
//
// A [Target] is what lint knows of a server: its tools as listed, read
// from the raw JSON so that an absent annotation is told from a false one
// and the seed's top-level "resolve" survives, and, for a running server,
// the capabilities it declared and the answers to tools/resolve probes.
// [ReadCatalog] reads one from a file (a tools/list result); [Observe]
// makes one from live [Session]s, resolving every resolvable tool with
// argument values enumerated from its input schema ([Enumerate]: enums,
// consts, booleans, examples, defaults), each request twice, plus
// arguments that break the schema and a tool that does not exist.
//
// [Run] applies every check in [Checks] (each with an id, a severity and
// a one-line explanation and fix) and a [Config]'s ignore entries, and
// returns a [Report], written as text, JSON or SARIF 2.1.0.
//
// lint never calls a tool: it only lists and resolves.
package lint
