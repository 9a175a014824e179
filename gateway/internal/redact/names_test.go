package redact_test

import (
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
)

func TestSensitiveName(t *testing.T) {
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
