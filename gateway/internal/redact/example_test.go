package redact_test

import (
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/hints"
)

func ExampleRedactor_Result() {
	r, err := redact.New(nil) // redact from confidential, withhold from restricted
	if err != nil {
		log.Fatal(err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: "Refund to jane.doe@example.com, card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00.",
	}}}

	out, report := r.Result(res, hints.SensitivityConfidential)
	fmt.Println(out.Content[0].(*mcp.TextContent).Text)
	fmt.Println(report.Kinds)

	out, report = r.Result(res, hints.SensitivityRestricted)
	fmt.Println(report.Withheld, out.IsError)
	fmt.Println(out.Content[0].(*mcp.TextContent).Text)

	out, _ = r.Result(res, hints.SensitivityInternal)
	fmt.Println(out == res)
	// Output:
	// Refund to [REDACTED:email], card [REDACTED:payment-card], IBAN [REDACTED:iban].
	// map[email:1 iban:1 payment-card:1]
	// true true
	// The result of this call was withheld by the gateway's policy: its sensitivity is restricted (declared for this call), and the gateway withholds results from restricted up.
	// true
}
