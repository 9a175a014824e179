// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/package.json)
// against a server URL, once for each requirement set (2026-07-28 and
// 2025-11-25): [Run], for tests. Its own test runs it against the fixture
// server of package conformance/fixture, served by package endpoint on one
// URL for both protocol eras; the gateway's test runs it against the
// gateway in front of the same fixture. See README.md.
package conformance
