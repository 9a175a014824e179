package disclose_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/preflightmcp/preflight/disclose"
)

type readArgs struct {
	Path string `json:"path" jsonschema:"file path, relative to the root"`
}

func readFile(_ context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, any, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "contents of " + a.Path}}}, nil, nil
}

// The README's progressive disclosure: tools/list lists each tool
// minimally, a call is refused until the tool's full description was
// fetched from the tool_descriptions resource, and then goes through.
func ExampleNew() {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "v1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "read_file", Description: "Read a file. Paths are relative to the root."}, readFile)
	d := disclose.New(server, nil) // minimal tools/list, the tool_descriptions resource, call gating
	d.SetDetails("read_file", &disclose.Details{Examples: []disclose.Example{{Description: "Read notes", Input: map[string]any{"path": "notes.txt"}}}})

	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "app", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	schema, _ := json.Marshal(list.Tools[0].InputSchema)
	fmt.Printf("listed: %q %s\n", list.Tools[0].Description, schema)

	call := &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}}
	res, err := cs.CallTool(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	if e, ok := disclose.ResultError(res); ok {
		fmt.Println("refused:", e.Code, e.ResourceURI)
	}
	full, err := disclose.Fetch(ctx, cs, "", "read_file")
	if err != nil {
		log.Fatal(err)
	}
	var def struct {
		Description string `json:"description"`
		Examples    []any  `json:"examples"`
	}
	if err := json.Unmarshal(full["read_file"], &def); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fetched: %q, %d example\n", def.Description, len(def.Examples))
	res, err = cs.CallTool(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("called:", res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// listed: "Read a file." {"type":"object"}
	// refused: TOOL_DESCRIPTION_REQUIRED resource:///tool_descriptions?tools=read_file
	// fetched: "Read a file. Paths are relative to the root.", 1 example
	// called: contents of notes.txt
}
