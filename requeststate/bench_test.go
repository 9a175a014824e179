package requeststate

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fiveAnswers is a payload of the size of five recorded elicitation
// answers, about 200 bytes of JSON each.
func fiveAnswers(tb testing.TB) []byte {
	type answer struct {
		Digest  string         `json:"digest"`
		Kind    string         `json:"kind"`
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	answers := map[string]answer{}
	for i := range 5 {
		answers[fmt.Sprintf("confirm_%d", i)] = answer{
			Digest:  mustDigest(tb, map[string]any{"question": i}),
			Kind:    "elicitation",
			Action:  "accept",
			Content: map[string]any{"ok": true, "note": strings.Repeat("n", 56), "count": 42},
		}
	}
	b, err := json.Marshal(map[string]any{"v": 1, "answers": answers})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func benchPayloads(b *testing.B) []struct {
	name    string
	payload []byte
} {
	return []struct {
		name    string
		payload []byte
	}{
		{"small", []byte(`{"asked":["confirm"]}`)},
		{"five-answers", fiveAnswers(b)},
	}
}

func BenchmarkSeal(b *testing.B) {
	r := mustRing(b, []Key{testKey("k1", 1)}, nil)
	bind := testBinding(b)
	for _, p := range benchPayloads(b) {
		b.Run(p.name, func(b *testing.B) {
			tok := mustSeal(b, r, bind, p.payload)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Seal(bind, p.payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.payload)), "payload-bytes")
			b.ReportMetric(float64(len(tok)), "token-bytes")
		})
	}
}

func BenchmarkOpen(b *testing.B) {
	r := mustRing(b, []Key{testKey("k1", 1)}, nil)
	bind := testBinding(b)
	for _, p := range benchPayloads(b) {
		b.Run(p.name, func(b *testing.B) {
			tok := mustSeal(b, r, bind, p.payload)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Open(tok, bind); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(tok)), "token-bytes")
		})
	}
}

// BenchmarkOpenRefused is the cost of refusing a tampered token of the
// five-answers size (the authentication fails).
func BenchmarkOpenRefused(b *testing.B) {
	r := mustRing(b, []Key{testKey("k1", 1)}, nil)
	bind := testBinding(b)
	raw, _ := base64.RawURLEncoding.DecodeString(mustSeal(b, r, bind, fiveAnswers(b)))
	raw[len(raw)/2] ^= 1
	bad := base64.RawURLEncoding.EncodeToString(raw)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(bad, bind); err == nil {
			b.Fatal("opened")
		}
	}
}

func BenchmarkArgumentsDigest(b *testing.B) {
	args := json.RawMessage(`{"path":"/srv/data/reports/2026","recursive":true,"exclude":["*.tmp","*.bak"],"limits":{"files":1000,"bytes":1.5e9}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ArgumentsDigest(args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenRequest is what a retry costs a hand-written flow: the
// binding from the SDK request (arguments digest included) and Open.
func BenchmarkOpenRequest(b *testing.B) {
	r := mustRing(b, []Key{testKey("k1", 1)}, nil)
	req := &mcp.CallToolRequest{
		Params: &mcp.CallToolParamsRaw{Name: "delete_folder", Arguments: json.RawMessage(`{"path":"/srv/data","recursive":true}`)},
		Extra:  &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "alice"}},
	}
	tok, err := r.SealRequest(req, "folders", fiveAnswers(b))
	if err != nil {
		b.Fatal(err)
	}
	req.Params.RequestState = tok
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.OpenRequest(req, "folders"); err != nil {
			b.Fatal(err)
		}
	}
}
