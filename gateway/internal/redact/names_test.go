package redact_test

import (
	"strings"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
)

func TestSensitiveName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"password": true, "Password": true, "db_password": true, "pass-phrase": true, "API Key": true,
		"apiKey": true, "client_secret": true, "Authorization": true, "session-token": true, "Cookie": true,
		"otp": true, "OTP": true, "o_t_p": true, "ssn": true, // listed
		"note": false, "path": false, "topic": false, "options": false, "keyboard": false, "": false,
	} {
		if got := redact.SensitiveName(name, []string{"ssn"}); got != want {
			t.Errorf("SensitiveName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestReplaceSecrets: a token found in one text is replaced in every text
// that holds it, each text says its kinds, and a private-key match that
// spans a command stays in clear, reported as implausible.
func TestReplaceSecrets(t *testing.T) {
	t.Parallel()
	const token = "ghp_R7tW1vB6nC0yH5jD3sA2eU1k8f3kK2mZ9qL4"
	got, ok := redact.ReplaceSecrets([]string{"token=" + token, "no secret here", "again " + token})
	if !ok {
		t.Fatal("not scanned")
	}
	if got.Texts[0] != "token=[REDACTED:github-pat]" || got.Texts[1] != "no secret here" || got.Texts[2] != "again [REDACTED:github-pat]" {
		t.Errorf("texts %q", got.Texts)
	}
	if len(got.Kinds[0]) != 1 || got.Kinds[0][0] != "github-pat" || got.Kinds[1] != nil || got.Implausible {
		t.Errorf("kinds %q, implausible %v", got.Kinds, got.Implausible)
	}
	cmd := "echo '-----BEGIN PRIVATE KEY-----' ; rm -rf / ; echo '" + strings.Repeat("A", 64) + "\n-----END PRIVATE KEY-----'"
	got, ok = redact.ReplaceSecrets([]string{cmd})
	if !ok || got.Texts[0] != cmd || !got.Implausible {
		t.Errorf("a match spanning a command: %q implausible=%v ok=%v", got.Texts, got.Implausible, ok)
	}
}
