// Package conformance holds no code of its own: its test runs the official
// MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// testdata/package.json) against the fixture server of package
// conformance/fixture, served by package endpoint on one URL for both
// protocol eras, once for each requirement set (2026-07-28 and 2025-11-25).
// See README.md.
package conformance
