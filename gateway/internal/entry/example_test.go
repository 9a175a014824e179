package entry_test

import (
	"fmt"

	"github.com/preflightmcp/preflight/gateway/internal/entry"
	"github.com/preflightmcp/preflight/gateway/internal/wire"
)

func ExampleParse() {
	_, err := entry.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call",
		"params":{"name":"files","arguments":{"action":"read","Action":"delete"}}}`))
	e := err.(*entry.Error)
	fmt.Println(e.Code, e.Member)
	fmt.Println(e.Message)

	m, _ := entry.Parse([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call",
		"params":{"name":"files","arguments":{"\u0061ction":"read"},"extra":"dropped"}}`))
	args, _ := m.CanonicalArguments()
	fmt.Printf("%s\n", wire.Request(m.ID, m.Method, wire.Params{Name: m.Name, Arguments: args, Meta: m.Meta}))
	// Output:
	// -32602 params.arguments.action
	// params.arguments.action: keys "action" and "Action" differ only in case; rename one
	// {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files","arguments":{"action":"read"}}}
}
