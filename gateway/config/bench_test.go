package config

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParse measures reading a full canonical file, and an editor's
// file that holds much else beside its servers (~/.claude.json keeps a
// history of each project).
//
//	go test -run '^$' -bench BenchmarkParse -benchmem ./gateway/config/
func BenchmarkParse(b *testing.B) {
	full := read(b, "examples/full.yaml")
	var big strings.Builder
	big.WriteString(`{"numStartups": 12, "projects": {`)
	for i := range 500 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `"/home/alice/p%d": {"history": [%s], "allowedTools": []}`, i,
			strings.Repeat(`{"display": "fix the failing test in the parser please", "pastedContents": {}},`, 20)+`{}`)
	}
	big.WriteString(`}, "mcpServers": {`)
	for i := range 20 {
		if i > 0 {
			big.WriteString(",")
		}
		fmt.Fprintf(&big, `"s%d": {"type": "stdio", "command": "npx", "args": ["-y", "server-%d"], "env": {"TOKEN": "${API_KEY}"}}`, i, i)
	}
	big.WriteString("}}")
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"canonical", full},
		{"claude.json", []byte(big.String())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for b.Loop() {
				if _, err := Parse("/home/alice/"+tc.name, tc.data, testEnv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
