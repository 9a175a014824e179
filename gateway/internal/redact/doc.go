// Package redact removes secrets and personal data from tool results
// before they reach a client, by the result's sensitivity.
//
// A call's sensitivity is the effective mcp.dev/resultSensitivity of the
// call (package hints: public < internal < confidential < restricted),
// raised by a trust-annotations label ("sensitive": true under
// _meta["io.modelcontextprotocol/trust-annotations"]) on the result or on
// any of its content blocks. From [Options.From] up the result is redacted;
// from [Options.Withhold] up it is replaced by a tool error saying it was
// withheld and why; below, it passes untouched.
//
// Secrets are found by gitleaks' default rule set (a copy of its
// config/gitleaks.toml, in gitleaks/ with its licence; tests hold it to the
// gitleaks version go.mod requires and to the rules gitleaks builds from
// it), with gitleaks' keywords,
// expressions, secret groups, entropy limits and allowlists, but not its
// "gitleaks:allow" comments, which the text's author controls. The rules
// run only in windows around their keywords, worked out from each
// expression's syntax, which makes a scan some hundred times cheaper than
// gitleaks' detector while finding what it finds. Personal data (e-mail
// addresses, phone numbers, payment card numbers, IBANs, US social
// security numbers and, on request, IPv4 addresses) is found by scanners
// that confirm each candidate with its format's check: Luhn, mod 97,
// libphonenumber's numbering plans, the SSA's rules.
//
// Each value found is replaced, everywhere in the result, by
// "[REDACTED:kind]": in text, in structured content (strings, keys, and
// numbers, which become strings), in embedded resources (text, and blobs
// of a text type), and in resource links; also in its JSON-escaped forms,
// so that a text block mirroring the structured content is redacted alike.
// Images, audio and other binary blobs pass unscanned and are counted. The
// [Report] gives the kinds and how many distinct values of each were
// redacted, never the values.
package redact
