package redact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/preflightmcp/preflight/hints"
)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// token returns n characters of alphabet from a fixed generator: the
// tests build secret-shaped strings rather than write any down.
func token(seed uint64, alphabet string, n int) string {
	rng := rand.New(rand.NewPCG(seed, 99))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

type secretSample struct {
	kind  string // the gitleaks rule that must report it
	text  string // a context holding it
	value string
}

// secretSamples are secrets in the formats of real providers: gitleaks'
// own test fixtures where it has literal ones, else generated in the
// rule's format.
func secretSamples() []secretSample {
	ghp := "ghp_" + token(1, alnum, 36)
	aws := "AKIA" + "LALEMEL33243OLIB"                                       // gitleaks' aws-access-token fixture
	slack := "xoxb-" + "781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD" // gitleaks' slack-bot-token fixture
	stripe := "sk_" + "live_" + token(2, alnum, 24)
	key := "-----BEGIN RSA " + "PRIVATE KEY-----\n" + token(3, alnum+"+/", 64) + "\n" + token(4, alnum+"+/", 64) + "\n-----END RSA PRIVATE KEY-----"
	jwt := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ." + "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	generic := token(5, alnum, 20)
	return []secretSample{
		{"github-pat", "git push https://x:" + ghp + "@github.com/o/r", ghp},
		{"aws-access-token", "aws_access_key_id = " + aws + "\n", aws},
		{"slack-bot-token", `{"bot_token": "` + slack + `"}`, slack},
		{"stripe-access-token", "STRIPE_KEY=" + stripe, stripe},
		{"private-key", "key:\n" + key + "\n", key},
		{"jwt", "Authorization: Bearer " + jwt, jwt},
		{"generic-api-key", `db_password = "` + generic + `"`, generic},
	}
}

func newRedactor(t testing.TB, o *Options) *Redactor {
	t.Helper()
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func textResult(texts ...string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{}
	for _, s := range texts {
		res.Content = append(res.Content, &mcp.TextContent{Text: s})
	}
	return res
}

func text(t *testing.T, res *mcp.CallToolResult, i int) string {
	t.Helper()
	c, ok := res.Content[i].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %d is %T, not text", i, res.Content[i])
	}
	return c.Text
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	for _, s := range secretSamples() {
		t.Run(s.kind, func(t *testing.T) {
			out, rep := r.Result(textResult(s.text), hints.SensitivityConfidential)
			got := text(t, out, 0)
			if strings.Contains(got, s.value) {
				t.Errorf("the %s is still there: %q", s.kind, got)
			}
			if !strings.Contains(got, "[REDACTED:"+s.kind+"]") {
				t.Errorf("no [REDACTED:%s] in %q", s.kind, got)
			}
			if rep.Kinds[s.kind] != 1 {
				t.Errorf("report %v, want %s: 1", rep.Kinds, s.kind)
			}
		})
	}
}

// The rule set's allowlists are part of it: AWS's documentation key is a
// placeholder to gitleaks, and so it is here.
func TestSecretsAllowlisted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{Kinds: []Kind{Secrets}})
	for _, s := range []string{
		"aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
		"password = ${DB_PASSWORD}",
		"token: {{ secrets.TOKEN }}",
	} {
		res := textResult(s)
		if out, rep := r.Result(res, hints.SensitivityConfidential); out != res || rep.Redacted() {
			t.Errorf("%q was redacted: %q, %v", s, text(t, out, 0), rep.Kinds)
		}
	}
}

// A "gitleaks:allow" comment is the text's author's to write, and the
// author of a result is the server: it does not stop redaction.
func TestGitleaksAllowCommentIgnored(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	ghp := "ghp_" + token(6, alnum, 36)
	out, _ := r.Result(textResult("token = "+ghp+" # gitleaks:allow"), hints.SensitivityConfidential)
	if strings.Contains(text(t, out, 0), ghp) {
		t.Error("a gitleaks:allow comment kept a token in the result")
	}
}

func TestPersonalDataRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{Kinds: []Kind{Email, Phone, PaymentCard, IBAN, USSSN, IPv4}})
	in := "Jane (jane.doe@example.com, +44 20 7946 0958) paid with 4111 1111 1111 1111 " +
		"from DE89 3704 0044 0532 0130 00; SSN 123-45-6789; seen from 192.168.1.20. " +
		"Order 4111111111111112, 2026-10-01."
	out, rep := r.Result(textResult(in), hints.SensitivityConfidential)
	want := "Jane ([REDACTED:email], [REDACTED:phone]) paid with [REDACTED:payment-card] " +
		"from [REDACTED:iban]; SSN [REDACTED:us-ssn]; seen from [REDACTED:ipv4]. " +
		"Order 4111111111111112, 2026-10-01."
	if got := text(t, out, 0); got != want {
		t.Errorf("redacted\n got %q\nwant %q", got, want)
	}
	wantKinds := map[string]int{"email": 1, "phone": 1, "payment-card": 1, "iban": 1, "us-ssn": 1, "ipv4": 1}
	if !reflect.DeepEqual(rep.Kinds, wantKinds) {
		t.Errorf("kinds %v, want %v", rep.Kinds, wantKinds)
	}
}

// Only the configured kinds are looked for; IPv4 is not a default.
func TestKinds(t *testing.T) {
	t.Parallel()
	in := "jane@example.com 4111111111111111 10.0.0.1"
	for _, c := range []struct {
		kinds []Kind
		want  string
	}{
		{nil, "[REDACTED:email] [REDACTED:payment-card] 10.0.0.1"},
		{[]Kind{Email}, "[REDACTED:email] 4111111111111111 10.0.0.1"},
		{[]Kind{PaymentCard, IPv4}, "jane@example.com [REDACTED:payment-card] [REDACTED:ipv4]"},
	} {
		out, _ := newRedactor(t, &Options{Kinds: c.kinds}).Result(textResult(in), hints.SensitivityConfidential)
		if got := text(t, out, 0); got != c.want {
			t.Errorf("kinds %v: %q, want %q", c.kinds, got, c.want)
		}
	}
}

func TestLevels(t *testing.T) {
	t.Parallel()
	in := "reach jane@example.com"
	type action int
	const (
		untouched action = iota
		redacted
		withheldAction
	)
	for _, c := range []struct {
		opts  *Options
		level hints.Sensitivity
		want  action
	}{
		{nil, "", untouched},
		{nil, hints.SensitivityPublic, untouched},
		{nil, hints.SensitivityInternal, untouched},
		{nil, hints.SensitivityConfidential, redacted},
		{nil, hints.SensitivityRestricted, withheldAction},
		{nil, "secret", untouched}, // not a sensitivity: no claim
		{&Options{From: hints.SensitivityInternal}, hints.SensitivityInternal, redacted},
		{&Options{From: hints.SensitivityPublic}, hints.SensitivityPublic, redacted},
		{&Options{Withhold: Off}, hints.SensitivityRestricted, redacted},
		{&Options{Withhold: hints.SensitivityConfidential}, hints.SensitivityConfidential, withheldAction},
		{&Options{From: Off}, hints.SensitivityConfidential, untouched},
		{&Options{From: Off}, hints.SensitivityRestricted, withheldAction},
		{&Options{From: Off, Withhold: Off}, hints.SensitivityRestricted, untouched},
	} {
		r := newRedactor(t, c.opts)
		res := textResult(in)
		out, rep := r.Result(res, c.level)
		var got action
		switch {
		case rep.Withheld:
			got = withheldAction
		case out != res:
			got = redacted
		}
		if got != c.want {
			t.Errorf("options %+v, level %q: action %d, want %d (%q)", c.opts, c.level, got, c.want, text(t, out, 0))
		}
		if wantLevel := c.level; wantLevel.Rank() >= 0 && rep.Level != wantLevel {
			t.Errorf("level %q reported as %q", c.level, rep.Level)
		}
	}
}

// richResult holds every kind of block, with secrets and personal data in
// each place a value can be.
func richResult(t testing.TB) *mcp.CallToolResult {
	t.Helper()
	ghp := "ghp_" + token(7, alnum, 36)
	size := int64(12)
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"note": "kept"},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "mail jane.doe@example.com", Meta: mcp.Meta{"k": "v"}},
			&mcp.ImageContent{Data: []byte("\x89PNG\r\n\x1a\n jane.doe@example.com"), MIMEType: "image/png"},
			&mcp.AudioContent{Data: []byte("RIFF...."), MIMEType: "audio/wav"},
			&mcp.ResourceLink{URI: "https://example.com/export?token=" + ghp, Name: "export", Description: "for jane.doe@example.com", Size: &size},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "card 4111 1111 1111 1111"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///cfg.json", MIMEType: "application/json", Blob: []byte(`{"token": "` + ghp + `"}`)}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///photo.png", MIMEType: "image/png", Blob: []byte("\x89PNG jane.doe@example.com")}},
		},
		StructuredContent: map[string]any{
			"owner":           "jane.doe@example.com",
			"cards":           []any{"4111 1111 1111 1111", 5555555555554444.0},
			"+1 650-253-0000": "the key is a phone number",
			"count":           3.0,
		},
	}
}

func TestEveryPlaceRedacted(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	res := richResult(t)
	before := marshal(t, res)
	out, rep := r.Result(res, hints.SensitivityConfidential)
	if marshal(t, res) != before {
		t.Fatal("the input was modified")
	}
	got := marshal(t, out)
	for _, v := range []string{"jane.doe@example.com", "4111 1111 1111 1111", "5555555555554444", "650-253-0000", "ghp_"} {
		// Binary blocks are passed on unscanned; their bytes are base64
		// on the wire.
		if strings.Contains(got, v) {
			t.Errorf("%q is still in %s", v, got)
		}
	}
	for _, v := range []string{`"note":"kept"`, `"k":"v"`, `"count":3`, `"size":12`, "file:///photo.png", "export"} {
		if !strings.Contains(got, v) {
			t.Errorf("%q is gone from %s", v, got)
		}
	}
	if rep.Unscanned != 3 {
		t.Errorf("unscanned %d, want 3 (an image, audio, a PNG blob)", rep.Unscanned)
	}
	want := map[string]int{"email": 1, "github-pat": 1, "payment-card": 2, "phone": 1}
	if !reflect.DeepEqual(rep.Kinds, want) {
		t.Errorf("kinds %v, want %v", rep.Kinds, want)
	}
	if img := out.Content[1].(*mcp.ImageContent); string(img.Data) != string(res.Content[1].(*mcp.ImageContent).Data) {
		t.Error("the image changed")
	}
	sc := out.StructuredContent.(map[string]any)
	if sc["cards"].([]any)[1] != "[REDACTED:payment-card]" {
		t.Errorf("a card number given as a JSON number became %v", sc["cards"].([]any)[1])
	}
	if _, ok := sc["[REDACTED:phone]"]; !ok {
		t.Errorf("a phone number as a key was not redacted: %v", sc)
	}
}

// A text block that mirrors the structured content, as tools with an
// output schema send it, is redacted as the structured content is,
// whatever JSON escaping the server used.
func TestMirroredTextMatchesStructured(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	data, err := os.ReadFile("testdata/issue.json")
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	key := secretSamples()[4].value // a private key: newlines escaped in JSON
	sc["body"] = sc["body"].(string) + "\n<key>\n" + key + "\n</key>\nJosé <jose.garcia@example.com> é"
	for _, enc := range []struct {
		name   string
		encode func(any) []byte
	}{
		{"go", func(v any) []byte { b, _ := json.MarshalIndent(v, "", "  "); return b }},
		{"ascii", func(v any) []byte { b, _ := json.Marshal(v); return []byte(asciiJSON(string(b))) }},
		{"slashes", func(v any) []byte { b, _ := json.Marshal(v); return []byte(strings.ReplaceAll(string(b), "/", `\/`)) }},
	} {
		t.Run(enc.name, func(t *testing.T) {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(enc.encode(sc))}}, StructuredContent: sc}
			out, rep := r.Result(res, hints.SensitivityConfidential)
			var fromText any
			if err := json.Unmarshal([]byte(text(t, out, 0)), &fromText); err != nil {
				t.Fatalf("the redacted text is no longer JSON: %v", err)
			}
			if a, b := marshal(t, fromText), marshal(t, out.StructuredContent); a != b {
				t.Errorf("text and structured content differ:\n text %s\n structured %s", a, b)
			}
			for _, kind := range []string{"email", "github-pat", "phone", "private-key"} {
				if rep.Kinds[kind] == 0 {
					t.Errorf("no %s redacted: %v", kind, rep.Kinds)
				}
			}
			for _, v := range []string{"jose.garcia", key[40:60]} {
				if strings.Contains(text(t, out, 0), v) || strings.Contains(marshal(t, out.StructuredContent), v) {
					t.Errorf("%q survived", v)
				}
			}
		})
	}
}

// A text that is JSON stays JSON: a card number given as a number becomes
// a string.
func TestJSONTextStaysJSON(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	in := `{"pan": 4111111111111111, "n": [1, -2.5e3], "s": "4111 1111 1111 1111"}`
	out, _ := r.Result(textResult(in), hints.SensitivityConfidential)
	want := `{"pan": "[REDACTED:payment-card]", "n": [1, -2.5e3], "s": "[REDACTED:payment-card]"}`
	if got := text(t, out, 0); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A text that only starts like JSON is replaced whole.
	in = `[INFO] card 4111111111111111 for "jane@example.com"`
	out, _ = r.Result(textResult(in), hints.SensitivityConfidential)
	if got, want := text(t, out, 0), `[INFO] card [REDACTED:payment-card] for "[REDACTED:email]"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A text that is JSON is read decoded: an address at the start of a line
// is "\njane@..." there, not the address "njane@...".
func TestJSONTextReadDecoded(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	in := `{"body": "Hello,\njane@example.com\tand\r\nbob@example.org"}`
	out, rep := r.Result(textResult(in), hints.SensitivityConfidential)
	want := `{"body": "Hello,\n[REDACTED:email]\tand\r\n[REDACTED:email]"}`
	if got := text(t, out, 0); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if rep.Kinds["email"] != 2 {
		t.Errorf("kinds %v", rep.Kinds)
	}
}

func TestUntouchedIsTheSameResult(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	for _, c := range []struct {
		name  string
		res   *mcp.CallToolResult
		level hints.Sensitivity
	}{
		{"below the threshold", richResult(t), hints.SensitivityInternal},
		{"unknown sensitivity", richResult(t), ""},
		{"nothing found", textResult("build 1347 passed on 2026-10-01"), hints.SensitivityConfidential},
	} {
		before := marshal(t, c.res)
		out, rep := r.Result(c.res, c.level)
		if out != c.res {
			t.Errorf("%s: a new result was returned", c.name)
		}
		if marshal(t, out) != before || rep.Redacted() || rep.Withheld {
			t.Errorf("%s: the result changed: %s, %+v", c.name, marshal(t, out), rep)
		}
	}
	if out, rep := r.Result(nil, hints.SensitivityRestricted); out != nil || rep.Withheld {
		t.Errorf("nil result: %v, %+v", out, rep)
	}
}

func TestWithheld(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	res := richResult(t)
	out, rep := r.Result(res, hints.SensitivityRestricted)
	if !rep.Withheld || rep.Level != hints.SensitivityRestricted || rep.Kinds != nil {
		t.Errorf("report %+v", rep)
	}
	if !out.IsError || out.StructuredContent != nil || len(out.Content) != 1 {
		t.Fatalf("withheld result: %s", marshal(t, out))
	}
	msg := text(t, out, 0)
	for _, want := range []string{"withheld by the gateway's policy", "restricted", "declared for this call", rep.Reason} {
		if !strings.Contains(msg, want) {
			t.Errorf("the notice %q does not say %q", msg, want)
		}
	}
	if strings.Contains(marshal(t, out), "example.com") {
		t.Error("the notice holds content of the result")
	}
}

func TestTrustAnnotationLabels(t *testing.T) {
	t.Parallel()
	label := func(v any) mcp.Meta { return mcp.Meta{trustAnnotations: map[string]any{"sensitive": v}} }
	in := "reach jane@example.com"
	for _, c := range []struct {
		name     string
		res      func() *mcp.CallToolResult
		level    hints.Sensitivity
		opts     *Options
		want     hints.Sensitivity // reported level
		redacted bool
		withheld bool
	}{
		{"result label", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label(true); return r },
			hints.SensitivityInternal, nil, hints.SensitivityConfidential, true, false},
		{"label without hint", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label(true); return r },
			"", nil, hints.SensitivityConfidential, true, false},
		{"label on an image block", func() *mcp.CallToolResult {
			r := textResult(in)
			r.Content = append(r.Content, &mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}, Meta: label(true)})
			return r
		}, hints.SensitivityPublic, nil, hints.SensitivityConfidential, true, false},
		{"label on embedded contents", func() *mcp.CallToolResult {
			r := textResult(in)
			r.Content = append(r.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "x:y", Text: "z", Meta: label(true)}})
			return r
		}, "", nil, hints.SensitivityConfidential, true, false},
		{"false claims nothing", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label(false); return r },
			hints.SensitivityInternal, nil, hints.SensitivityInternal, false, false},
		{"a string is not a label", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label("true"); return r },
			hints.SensitivityInternal, nil, hints.SensitivityInternal, false, false},
		{"a block cannot lower the result", func() *mcp.CallToolResult {
			r := textResult(in)
			r.Meta = label(true)
			r.Content[0].(*mcp.TextContent).Meta = label(false)
			return r
		}, "", nil, hints.SensitivityConfidential, true, false},
		{"a label cannot lower the hint", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label(true); return r },
			hints.SensitivityRestricted, nil, hints.SensitivityRestricted, false, true},
		{"a label counted as restricted", func() *mcp.CallToolResult { r := textResult(in); r.Meta = label(true); return r },
			hints.SensitivityInternal, &Options{Sensitive: hints.SensitivityRestricted}, hints.SensitivityRestricted, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, rep := newRedactor(t, c.opts).Result(c.res(), c.level)
			if rep.Level != c.want || rep.Redacted() != c.redacted || rep.Withheld != c.withheld {
				t.Errorf("report %+v, want level %q, redacted %v, withheld %v", rep, c.want, c.redacted, c.withheld)
			}
			if c.withheld && !strings.Contains(text(t, out, 0), "labelled") && c.level != hints.SensitivityRestricted {
				t.Errorf("the notice does not say the label decided: %q", text(t, out, 0))
			}
		})
	}
}

func TestMaxBytes(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{MaxBytes: 1024})
	big := textResult(strings.Repeat("a quiet line of text\n", 60)) // 1260 bytes
	out, rep := r.Result(big, hints.SensitivityConfidential)
	if !rep.Withheld || !strings.Contains(rep.Reason, "more than the 1.0 KiB") {
		t.Errorf("a result over MaxBytes was not withheld: %+v", rep)
	}
	if !out.IsError {
		t.Error("the notice is not a tool error")
	}
	if out, rep := r.Result(big, hints.SensitivityInternal); out != big || rep.Withheld {
		t.Error("a result over MaxBytes below the threshold was not passed on untouched")
	}
	small := textResult(strings.Repeat("x", 1024))
	if out, rep := r.Result(small, hints.SensitivityConfidential); out != small || rep.Withheld {
		t.Errorf("a result of exactly MaxBytes was not scanned: %+v", rep)
	}
}

// The report says kinds and counts, and none of the values, whichever way
// it is printed.
func TestReportHoldsNoValues(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{Kinds: append(DefaultKinds(), IPv4)})
	var parts, values []string
	for _, s := range secretSamples() {
		parts = append(parts, s.text)
		values = append(values, s.value)
	}
	pii := []string{"jane.doe@example.com", "+44 20 7946 0958", "4111 1111 1111 1111", "DE89 3704 0044 0532 0130 00", "123-45-6789", "192.168.1.20"}
	parts = append(parts, pii...)
	values = append(values, pii...)
	res := textResult(strings.Join(parts, "\n"))
	res.StructuredContent = map[string]any{"all": strings.Join(parts, "\n")}
	out, rep := r.Result(res, hints.SensitivityConfidential)
	if len(rep.Kinds) != len(values) {
		t.Errorf("kinds %v, want %d", rep.Kinds, len(values))
	}
	printed := marshal(t, rep) + fmt.Sprintf("%v %+v %#v", rep, rep, rep)
	for _, v := range values {
		for _, part := range strings.Fields(v) {
			if len(part) >= 4 && strings.Contains(printed, part) {
				t.Errorf("the report holds %q: %s", part, printed)
			}
		}
		if strings.Contains(marshal(t, out), v) {
			t.Errorf("the result still holds %q", v)
		}
	}
}

func TestRedactingTwiceChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	out, _ := r.Result(richResult(t), hints.SensitivityConfidential)
	again, rep := r.Result(out, hints.SensitivityConfidential)
	if again != out || rep.Redacted() {
		t.Errorf("a second pass changed the result: %v", rep.Kinds)
	}
}

// One Redactor serves concurrent calls (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, nil)
	want := marshal(t, must(r.Result(richResult(t), hints.SensitivityConfidential)))
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := marshal(t, must(r.Result(richResult(t), hints.SensitivityConfidential))); got != want {
					errs <- got
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for got := range errs {
		t.Errorf("a concurrent call returned %s, want %s", got, want)
	}
}

func must(res *mcp.CallToolResult, _ Report) *mcp.CallToolResult { return res }

func TestNewRefusesBadOptions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{From: "secret"}, `From: unknown sensitivity "secret"`},
		{Options{Withhold: "top"}, `Withhold: unknown sensitivity "top"`},
		{Options{Sensitive: Off}, `Sensitive: unknown sensitivity "off"`},
		{Options{Kinds: []Kind{"passport"}}, `unknown kind "passport"`},
		{Options{PhoneRegion: "XY"}, `PhoneRegion: "XY"`},
		{Options{MaxBytes: -1}, "MaxBytes: -1 is negative"},
	} {
		if _, err := New(&c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v): %v, want an error saying %q", c.opts, err, c.want)
		}
	}
}

// The default rule set is what the scanner expects: every rule has
// keywords, none is only reported with another, all those not limited to
// file names are compiled, and all but a few are planned (run in windows).
func TestDefaultRules(t *testing.T) {
	t.Parallel()
	cfg, err := defaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	rs := testRules(t)
	withRegex := 0
	for _, r := range cfg.Rules {
		if r.Regex == nil || r.Path != nil {
			continue
		}
		withRegex++
		if len(r.Keywords) == 0 || r.SkipReport || len(r.RequiredRules) > 0 {
			t.Errorf("rule %s: keywords %v, skipReport %v, required %d: the scanner does not handle it", r.RuleID, r.Keywords, r.SkipReport, len(r.RequiredRules))
		}
	}
	if len(rs.rules) != withRegex || withRegex < 200 {
		t.Errorf("%d rules compiled of %d with an expression", len(rs.rules), withRegex)
	}
	planned := 0
	for _, r := range rs.rules {
		if r.plans != nil {
			planned++
		}
	}
	if planned < len(rs.rules)-10 {
		t.Errorf("only %d of %d rules run in windows", planned, len(rs.rules))
	}
}

// Passes says, from the bytes, when Result would return a result as it is.
func TestPasses(t *testing.T) {
	t.Parallel()
	plain := []byte(`{"content":[{"type":"text","text":"jane@example.com"}]}`)
	labelled := []byte(`{"content":[{"type":"text","text":"x","_meta":{"io.modelcontextprotocol/trust-annotations":{"sensitive":true}}}]}`)
	for _, c := range []struct {
		opts  *Options
		level hints.Sensitivity
		body  []byte
		want  bool
	}{
		{nil, hints.SensitivityInternal, plain, true},
		{nil, "", plain, true},
		{nil, "nonsense", plain, true},
		{nil, hints.SensitivityConfidential, plain, false},
		{nil, hints.SensitivityRestricted, plain, false},
		{nil, hints.SensitivityInternal, labelled, false},
		{nil, hints.SensitivityInternal, bytes.ReplaceAll(labelled, []byte("/"), []byte(`\/`)), false},
		{&Options{Sensitive: hints.SensitivityInternal}, hints.SensitivityPublic, labelled, true},
		{&Options{From: Off, Withhold: Off}, hints.SensitivityRestricted, labelled, true},
	} {
		r := newRedactor(t, c.opts)
		if got := r.Passes(c.level, c.body); got != c.want {
			t.Errorf("options %+v, level %q, body %s: Passes = %v, want %v", c.opts, c.level, c.body, got, c.want)
		}
		// What Passes promises, Result keeps.
		var res mcp.CallToolResult
		if err := json.Unmarshal(c.body, &res); err != nil {
			t.Fatal(err)
		}
		if out, _ := r.Result(&res, c.level); c.want && out != &res {
			t.Errorf("options %+v, level %q: Passes, but Result changed the result", c.opts, c.level)
		}
	}
}

// A text made to match everywhere costs a bounded amount of work: the
// scan stops when it has read workFactor times MaxBytes, and the result
// is withheld. (BenchmarkCostly says how long that takes.)
func TestCostlyResultWithheld(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{MaxBytes: 16 << 10})
	costly := textResult(strings.Repeat(`password = "aB3dE5gH7jK9mN1pQ"`+"\n", (16<<10)/33))
	out, rep := r.Result(costly, hints.SensitivityConfidential)
	if !rep.Withheld || rep.Reason != tooCostly || !out.IsError {
		t.Errorf("a costly result was not withheld: %+v", rep)
	}
	// The same secrets in an ordinary amount are redacted.
	few := textResult(strings.Repeat(`password = "aB3dE5gH7jK9mN1pQ"`+"\n", 20))
	if _, rep := r.Result(few, hints.SensitivityConfidential); rep.Withheld || rep.Kinds["generic-api-key"] != 1 {
		t.Errorf("ordinary secrets: %+v", rep)
	}
	// The scan itself stops when its budget runs out.
	rs := testRules(t)
	budget := 1000
	if rs.scan(text(t, costly, 0), &budget, func(secretFinding) {}) {
		t.Error("a scan over its budget reported success")
	}
}

// Runes that fold to ASCII letters (KELVIN SIGN for k, LONG S for s) are
// matched as gitleaks matches them, and what is redacted is the text as
// it was.
func TestFoldingRunes(t *testing.T) {
	t.Parallel()
	r := newRedactor(t, &Options{Kinds: []Kind{Secrets}})
	secret := token(11, alnum, 20)
	in := "api_\u212Aey = \"" + secret + "\" and \u017Fecret = \"" + token(12, alnum, 20) + "\""
	out, rep := r.Result(textResult(in), hints.SensitivityConfidential)
	want := "api_\u212Aey = \"[REDACTED:generic-api-key]\" and \u017Fecret = \"[REDACTED:generic-api-key]\""
	if got := text(t, out, 0); got != want || rep.Kinds["generic-api-key"] != 2 {
		t.Errorf("got %q (%v), want %q", got, rep.Kinds, want)
	}
	f := foldRunes("a\u212Ab\u017Fc\u212A\x81")
	if f.text != "aKbscK\x81" {
		t.Fatalf("folded %q", f.text)
	}
	for p, want := range []int{0, 1, 4, 5, 7, 8, 11, 12} {
		if got := f.orig(p); got != want {
			t.Errorf("orig(%d) = %d, want %d", p, got, want)
		}
	}
}

// valueReplacer replaces as strings.Replacer does.
func TestValueReplacer(t *testing.T) {
	t.Parallel()
	olds := []string{"abcd", "abc", "bc", "cd", "x"}
	var args []string
	r := &valueReplacer{olds: olds}
	for i, o := range olds {
		r.news = append(r.news, fmt.Sprintf("<%d>", i))
		args = append(args, o, r.news[i])
	}
	std := strings.NewReplacer(args...)
	inputs := []string{"", "abcd", "abcabcd", "xbcdx", "aabcdd", "bcd", "abc abcd cd", "no match"}
	for _, s := range inputs {
		if got, want := r.Replace(s), std.Replace(s); got != want {
			t.Errorf("Replace(%q) = %q, strings.Replacer gives %q", s, got, want)
		}
	}
	// With many values, found by their first bytes.
	values := map[string]string{"ab": "short", "x": "x"}
	for i := range 40 {
		values[fmt.Sprintf("value-%02d", i)] = "email"
		values[fmt.Sprintf("value-%02d-longer", i)] = "phone"
	}
	many := replacer(values)
	if many.byPrefix == nil {
		t.Fatal("many values are not looked up by prefix")
	}
	args = nil
	for i, o := range many.olds {
		args = append(args, o, many.news[i])
	}
	std = strings.NewReplacer(args...)
	for _, s := range append(inputs, "value-07 value-07-longer xvalue-39-longerab", "value-0", "valu") {
		if got, want := many.Replace(s), std.Replace(s); got != want {
			t.Errorf("many: Replace(%q) = %q, strings.Replacer gives %q", s, got, want)
		}
	}
}
