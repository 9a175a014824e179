package config

import (
	"slices"
	"strings"

	"github.com/preflightmcp/preflight/hints"
)

// Redaction is the redaction of tool results by their sensitivity
// (package gateway/redact). Its zero value, after [Parse], is the
// default: results of sensitivity confidential redacted, restricted
// withheld.
type Redaction struct {
	// Level is the sensitivity from which results are redacted: public,
	// internal, confidential (default), restricted, or off.
	Level RedactionLevel `json:"level"`
	// Withhold is the sensitivity from which results are withheld whole:
	// restricted (default), or off, or a lower one.
	Withhold RedactionLevel `json:"withhold"`
	// Sensitive is what a trust-annotations "sensitive": true label on a
	// result counts as (default confidential).
	Sensitive hints.Sensitivity `json:"sensitive"`
	// Kinds are what is looked for: secrets, email, phone, payment-card,
	// iban, us-ssn, ipv4. Empty means all but ipv4.
	Kinds []RedactionKind `json:"kinds,omitempty"`
	// PhoneRegion is the region (ISO 3166 alpha-2) of phone numbers
	// written without a country code (default US; ZZ for international
	// numbers only).
	PhoneRegion string `json:"phoneRegion,omitempty"`
}

// RedactionLevel is a sensitivity, or off.
type RedactionLevel string

// RedactionOff switches a redaction step off.
const RedactionOff RedactionLevel = "off"

// RedactionKind is a kind of value redacted.
type RedactionKind string

// redactionKinds are the kinds package gateway/redact looks for.
var redactionKinds = []RedactionKind{"secrets", "email", "phone", "payment-card", "iban", "us-ssn", "ipv4"}

func redactionLevels() []string {
	out := make([]string, 0, len(hints.Sensitivities)+1)
	for _, s := range hints.Sensitivities {
		out = append(out, string(s))
	}
	return append(out, string(RedactionOff))
}

// redaction checks the redaction section and applies its defaults.
func (p *parser) redaction(r *Redaction) {
	if r.Level == "" {
		r.Level = RedactionLevel(hints.SensitivityConfidential)
	}
	if r.Withhold == "" {
		r.Withhold = RedactionLevel(hints.SensitivityRestricted)
	}
	if r.Sensitive == "" {
		r.Sensitive = hints.SensitivityConfidential
	}
	for i, k := range r.Kinds {
		if j := slices.Index(r.Kinds, k); j < i {
			p.fail(index("redaction.kinds", i), "%s is also kinds[%d]", quote(string(k)), j)
		}
	}
	if len(r.Kinds) == 0 {
		r.Kinds = nil
	}
	if r.PhoneRegion != "" && (len(r.PhoneRegion) != 2 || strings.ToUpper(r.PhoneRegion) != r.PhoneRegion || strings.Trim(r.PhoneRegion, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
		p.fail("redaction.phoneRegion", "%s is not a region: two capital letters, an ISO 3166 alpha-2 code such as US or DE (ZZ: international numbers only)", quote(r.PhoneRegion))
	}
}
