package redact

import (
	"slices"
	"strings"
	"unicode"
)

// credentialWords mark argument names whose values are never shown or
// recorded: a name containing one of them, ignoring case, "-", "_" and
// spaces, or that is "otp".
var credentialWords = []string{"password", "passwd", "passphrase", "secret", "token", "apikey", "authorization",
	"credential", "cookie", "privatekey", "accesskey", "clientsecret", "sessionkey"}

// SensitiveName reports whether the value of an argument called name is
// withheld from an audit record or an approval's preview: a name listed
// (exactly), or one that looks like a credential's.
func SensitiveName(name string, listed []string) bool {
	if slices.Contains(listed, name) {
		return true
	}
	folded := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
	if folded == "otp" {
		return true
	}
	for _, w := range credentialWords {
		if strings.Contains(folded, w) {
			return true
		}
	}
	return false
}
