// Command stdioserver serves the interop fixture server over stdio. The
// interop tests build it and point third-party clients at it.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/interop/internal/fixture"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("stdioserver: ")
	if err := fixture.NewServer(nil).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
