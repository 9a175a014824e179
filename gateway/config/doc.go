// Package config reads the configuration of the preflight gateway.
//
// There is one canonical format, YAML, whose JSON Schema ([Schema],
// published at [SchemaURL]) lets editors check and complete it. The files
// MCP clients already have are read as they are: mcpServers JSON as Claude
// Desktop, Claude Code and Cursor write it, and VS Code's mcp.json, told
// apart by their content. String values may use ${NAME}, ${env:NAME} and
// ${NAME:-default}. The auth section says how clients authenticate
// (static token hashes, an OAuth issuer); without it [Parse] allows only a
// loopback listen.http.
//
// [Parse] and [Load] return a validated [Config] with every default
// applied, or [Errors]: every problem in the file, each with the line and
// column, the key (servers.github.type) and what is allowed. [Watch]
// delivers each new valid version of a file as it changes or on SIGHUP,
// and keeps the previous one when an edit is bad. [Marshal] writes any
// config in the canonical format.
//
// The format is described in docs/config.md.
package config
