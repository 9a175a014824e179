// Command streamer is an MCP server whose tool "stream" never answers:
// it sends progress every millisecond, whatever the client says
// (cancellation, a closed stream), until the process ends. Over stdio by
// default; with -http ADDR it serves streamable HTTP (2025-11-25
// sessions) and prints its URL. Shutdown tests stand it behind the
// gateway.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address instead of stdio")
	flag.Parse()
	s := mcp.NewServer(&mcp.Implementation{Name: "streamer", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "stream", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			for i := 0; ; i++ {
				time.Sleep(time.Millisecond)
				_ = req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{
					ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Message: "still going"})
			}
		})
	if *addr == "" {
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "streamer:", err)
			os.Exit(1)
		}
		return
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "streamer:", err)
		os.Exit(1)
	}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	fmt.Fprintln(os.Stderr, "streamer:", http.Serve(ln, h))
	os.Exit(1)
}
