package redact

import (
	"slices"
	"testing"
)

// found returns the substrings of t a scanner reports.
func found(scan func(string, func(int, int)), t string) []string {
	var out []string
	scan(t, func(s, e int) { out = append(out, t[s:e]) })
	return out
}

// withRuns gives a scanner of numbers the runs of digits of its text.
func withRuns(scan func(string, []int, func(int, int))) func(string, func(int, int)) {
	return func(t string, emit func(int, int)) { scan(t, digitRuns(t), emit) }
}

type piiCase struct {
	text string
	want []string // nil: nothing
}

func runPII(t *testing.T, kind string, scan func(string, func(int, int)), cases []piiCase) {
	t.Helper()
	for _, c := range cases {
		if got := found(scan, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s in %q: found %q, want %q", kind, c.text, got, c.want)
		}
	}
}

func TestEmails(t *testing.T) {
	t.Parallel()
	runPII(t, "email", scanEmails, []piiCase{
		{"jane.doe@example.com", []string{"jane.doe@example.com"}},
		{"contact: <a.b+tag@mail.example.co.uk>.", []string{"a.b+tag@mail.example.co.uk"}},
		{"mailto:ops_team%eu@corp.internal, then", []string{"ops_team%eu@corp.internal"}},
		{"JOHN@EXAMPLE.ORG and x@y.io", []string{"JOHN@EXAMPLE.ORG", "x@y.io"}},
		{"user@xn--80ak6aa92e.xn--p1ai", []string{"user@xn--80ak6aa92e.xn--p1ai"}},
		{`"email": "jane@example.com",`, []string{"jane@example.com"}},
		// near misses
		{"user@localhost", nil},
		{"follow @handle on the site", nil},
		{"a@b.c", nil},
		{"foo@bar.123", nil},
		{"logo@2x.png and icon@3x.jpg", nil},
		{"name@-bad.com", nil},
		{"name@bad-.com", nil},
		{"x@y..com", nil},
		{"user.@example.com", nil},
		{"first..last@example.com", nil},
		{"@example.com", nil},
		{"user@example.com_suffix", nil},
	})
}

func TestPhones(t *testing.T) {
	t.Parallel()
	budget := 1 << 30
	us := func(t string, emit func(int, int)) { phoneScanner{region: "US"}.scan(t, digitRuns(t), &budget, emit) }
	runPII(t, "phone", us, []piiCase{
		{"call +44 20 7946 0958 today", []string{"+44 20 7946 0958"}},
		{"+1 650-253-0000", []string{"+1 650-253-0000"}},
		{"+1 (650) 253-0000.", []string{"+1 (650) 253-0000"}},
		{"+49 30 12345678", []string{"+49 30 12345678"}},
		{"+33 1 23 45 67 89", []string{"+33 1 23 45 67 89"}},
		{"+442079460958", []string{"+442079460958"}},
		{"(650) 253-0000", []string{"(650) 253-0000"}},
		{"tel 650-253-0000", []string{"650-253-0000"}},
		{"650.253.0000", []string{"650.253.0000"}},
		{"650 253 0000", []string{"650 253 0000"}},
		// near misses: no separators, too short, no such country or
		// range, dates, addresses, other numbers
		{"6502530000", nil},
		{"+1 234", nil},
		{"+999 1234 5678", nil},
		{"+1 555 010 0199", nil},
		{"on 2026-10-01 at 12:00", nil},
		{"host 192.168.100.200", nil},
		{"123-456-7890", nil},
		{"ISBN 978-3-16-148410-0", nil},
		{"card 4111 1111 1111 1111", nil},
		{"version 1.2.3", nil},
		{"650-253-0000x", nil},
	})
	international := func(t string, emit func(int, int)) { phoneScanner{}.scan(t, digitRuns(t), &budget, emit) }
	runPII(t, "phone (international only)", international, []piiCase{
		{"+1 650-253-0000", []string{"+1 650-253-0000"}},
		{"(650) 253-0000", nil},
	})
}

func TestCards(t *testing.T) {
	t.Parallel()
	runPII(t, "payment-card", withRuns(scanCards), []piiCase{
		{"4111111111111111", []string{"4111111111111111"}},
		{"card: 4111 1111 1111 1111.", []string{"4111 1111 1111 1111"}},
		{"4111-1111-1111-1111", []string{"4111-1111-1111-1111"}},
		{"4222222222222", []string{"4222222222222"}},
		{"5555555555554444", []string{"5555555555554444"}},
		{"2223003122003222", []string{"2223003122003222"}},
		{"378282246310005", []string{"378282246310005"}},
		{"3782 822463 10005", []string{"3782 822463 10005"}},
		{"6011111111111117", []string{"6011111111111117"}},
		{"3530111333300000", []string{"3530111333300000"}},
		{"30569309025904", []string{"30569309025904"}},
		{"6200000000000005", []string{"6200000000000005"}},
		{`{"pan":4111111111111111}`, []string{"4111111111111111"}},
		{"4111111111111111 10.0.0.1", []string{"4111111111111111"}},
		{"page 1 4111 1111 1111 1111 2", []string{"4111 1111 1111 1111"}},
		// near misses: Luhn fails, no network, wrong length, part of a
		// longer run, mixed separators
		{"4111111111111112", nil},
		{"1234567812345670", nil},
		{"5555555555554444555", nil},
		{"41111111111111111111", nil},
		{"id4111111111111111", nil},
		{"4111111111111111x", nil},
		{"4111 1111-1111 1111", nil},
		{"order 12345678", nil},
	})
}

func TestLuhn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		digits string
		ok     bool
	}{
		{"79927398713", true}, // the example of ISO/IEC 7812-1
		{"79927398710", false},
		{"0", true},
		{"18", true},
		{"19", false},
	} {
		if got := luhn([]byte(c.digits)); got != c.ok {
			t.Errorf("luhn(%s) = %v, want %v", c.digits, got, c.ok)
		}
	}
}

func TestIBANs(t *testing.T) {
	t.Parallel()
	runPII(t, "iban", withRuns(scanIBANs), []piiCase{
		{"DE89 3704 0044 0532 0130 00", []string{"DE89 3704 0044 0532 0130 00"}},
		{"IBAN: DE89370400440532013000.", []string{"DE89370400440532013000"}},
		{"GB82 WEST 1234 5698 7654 32", []string{"GB82 WEST 1234 5698 7654 32"}},
		{"GB82WEST12345698765432", []string{"GB82WEST12345698765432"}},
		{"FR14 2004 1010 0505 0001 3M02 606 and more", []string{"FR14 2004 1010 0505 0001 3M02 606"}},
		{"NL91ABNA0417164300", []string{"NL91ABNA0417164300"}},
		{"CH9300762011623852957", []string{"CH9300762011623852957"}},
		// near misses: check digits, length, country, grouping
		{"DE89 3704 0044 0532 0130 01", nil},
		{"DE8937040044053201300", nil},
		{"DE893704004405320130001", nil},
		{"XX89370400440532013000", nil},
		{"DE89 37040 0440532013000", nil},
		{"de89370400440532013000", nil},
	})
}

func TestMod97(t *testing.T) {
	t.Parallel()
	// The example of ISO 13616-1, and the same with a digit changed.
	if !mod97([]byte("GB82WEST12345698765432")) {
		t.Error("GB82WEST12345698765432 fails mod 97")
	}
	if mod97([]byte("GB82WEST12345698765433")) {
		t.Error("GB82WEST12345698765433 passes mod 97")
	}
}

func TestSSNs(t *testing.T) {
	t.Parallel()
	runPII(t, "us-ssn", withRuns(scanSSNs), []piiCase{
		{"SSN 123-45-6789.", []string{"123-45-6789"}},
		{"536 90 4399", []string{"536 90 4399"}},
		// near misses: invalid areas, groups and serials, voided
		// numbers, no or mixed separators, longer runs
		{"000-12-3456", nil},
		{"666-12-3456", nil},
		{"912-34-5678", nil},
		{"123-00-4567", nil},
		{"123-45-0000", nil},
		{"078-05-1120", nil},
		{"219-09-9999", nil},
		{"123456789", nil},
		{"123-45 6789", nil},
		{"123-45-67890", nil},
		{"1123-45-6789", nil},
		{"123-45-6789-1", nil},
		{"v123-45-6789", nil},
	})
}

func TestIPv4(t *testing.T) {
	t.Parallel()
	runPII(t, "ipv4", withRuns(scanIPv4), []piiCase{
		{"from 192.168.1.20, then", []string{"192.168.1.20"}},
		{"10.0.0.1 8.8.8.8", []string{"10.0.0.1", "8.8.8.8"}},
		{"255.255.255.255", []string{"255.255.255.255"}},
		// near misses
		{"256.1.1.1", nil},
		{"1.2.3", nil},
		{"01.2.3.4", nil},
		{"1.2.3.4.5", nil},
		{"v1.2.3.4", nil},
		{"1.2.3.4a", nil},
	})
}
