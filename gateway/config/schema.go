package config

import (
	"bytes"
	_ "embed"
)

//go:embed schema.json
var schema []byte

// SchemaURL is where the canonical format's JSON Schema is published. A
// YAML file names it for editors with a first line of
//
//	# yaml-language-server: $schema=https://raw.githubusercontent.com/preflightmcp/preflight/main/gateway/config/schema.json
const SchemaURL = "https://raw.githubusercontent.com/preflightmcp/preflight/main/gateway/config/schema.json"

// Schema returns the JSON Schema of the canonical format (draft 2020-12),
// which editors use to check and complete config files.
func Schema() []byte { return bytes.Clone(schema) }
