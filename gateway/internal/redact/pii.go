package redact

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/net/publicsuffix"
)

// The personal-data detectors scan bytes by hand, in one pass each, and
// confirm candidates with the check their format defines: the Luhn check
// for card numbers, ISO 13616's mod-97 for IBANs, the numbering plans of
// libphonenumber (github.com/nyaruka/phonenumbers) for phone numbers, the
// SSA's rules for US social security numbers. Each reports spans of t.

// digitRuns returns where the runs of digits of t start: the scanners of
// numbers look only there, so that one pass over the text serves them all.
func digitRuns(t string) []int {
	var runs []int
	for i := 0; i < len(t); i++ {
		if isDigit(t[i]) && (i == 0 || !isDigit(t[i-1])) {
			runs = append(runs, i)
		}
	}
	return runs
}

func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isUpper(b byte) bool  { return 'A' <= b && b <= 'Z' }
func isLetter(b byte) bool { return isUpper(b) || 'a' <= b && b <= 'z' }
func isAlnum(b byte) bool  { return isDigit(b) || isLetter(b) }

// boundaryBefore reports whether the byte before i, if any, is not a
// letter, digit or one of extra.
func boundaryBefore(t string, i int, extra string) bool {
	return i == 0 || !isAlnum(t[i-1]) && strings.IndexByte(extra, t[i-1]) < 0
}

// boundaryAfter is boundaryBefore for the byte at i.
func boundaryAfter(t string, i int, extra string) bool {
	return i >= len(t) || !isAlnum(t[i]) && strings.IndexByte(extra, t[i]) < 0
}

// Emails: a local part of letters, digits and ._%+- (at most 64) before an
// @, a domain of at least two labels after it whose last label is a top
// level domain of the public suffix list (golang.org/x/net/publicsuffix)
// or a name reserved for private and test use. The list keeps out file
// names such as "logo@2x.png".

func isLocalByte(b byte) bool {
	return isAlnum(b) || b == '.' || b == '_' || b == '%' || b == '+' || b == '-'
}

func scanEmails(t string, emit func(start, end int)) {
	for i := 0; i < len(t); {
		j := strings.IndexByte(t[i:], '@')
		if j < 0 {
			return
		}
		at := i + j
		i = at + 1
		s := at
		for s > 0 && at-s < 64 && isLocalByte(t[s-1]) {
			s--
		}
		for s < at && (t[s] == '.' || t[s] == '-' || t[s] == '+') {
			s++
		}
		if s == at || t[at-1] == '.' || strings.Contains(t[s:at], "..") {
			continue
		}
		e := domainEnd(t, at+1)
		if e < 0 {
			continue
		}
		emit(s, e)
		i = e
	}
}

// domainEnd returns the end of a domain name starting at i, -1 when there
// is none.
func domainEnd(t string, i int) int {
	end, labels := -1, 0
	for {
		j := i
		for j < len(t) && j-i < 63 && (isAlnum(t[j]) || t[j] == '-') {
			j++
		}
		label := t[i:j]
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			break
		}
		labels++
		if labels >= 2 && !(j < len(t) && (isAlnum(t[j]) || t[j] == '_' || t[j] == '-')) && tld(label) {
			end = j
		}
		if j+1 >= len(t) || t[j] != '.' || !isAlnum(t[j+1]) {
			break
		}
		i = j + 1
	}
	return end
}

// tld reports whether label is a top-level domain.
func tld(label string) bool {
	label = strings.ToLower(label)
	switch label {
	case "test", "example", "invalid", "localhost", "local", "internal": // RFC 2606, 6761, 6762; ICANN's .internal
		return true
	}
	if len(label) < 2 {
		return false
	}
	suffix, icann := publicsuffix.PublicSuffix(label)
	return icann && suffix == label
}

// Payment cards: 13 to 19 digits, whole or in groups separated by single
// spaces or hyphens (one kind per number), that pass the Luhn check and
// start with the issuer prefix of a card network at one of its lengths.

func scanCards(t string, runs []int, emit func(start, end int)) {
	type group struct{ start, end int }
	var groups []group
	next := 0
	for _, i := range runs {
		if i < next || !boundaryBefore(t, i, "") {
			continue
		}
		// A run of digit groups joined by one kind of separator; the
		// number is the longest stretch of whole groups that checks.
		groups = groups[:0]
		j, sep := i, byte(0)
		for {
			k := j
			for k < len(t) && isDigit(t[k]) {
				k++
			}
			groups = append(groups, group{j, k})
			if len(groups) < 10 && k+1 < len(t) && (t[k] == ' ' || t[k] == '-') && (sep == 0 || sep == t[k]) && isDigit(t[k+1]) {
				sep, j = t[k], k+1
				continue
			}
			j = k
			break
		}
		last := len(groups) - 1
		for a := 0; a <= last; a++ {
			for b := last; b >= a; b-- {
				if b == last && !boundaryAfter(t, groups[b].end, "") {
					continue
				}
				var digits [19]byte
				n := 0
				for g := a; g <= b && n <= 19; g++ {
					for p := groups[g].start; p < groups[g].end && n <= 19; p++ {
						if n < len(digits) {
							digits[n] = t[p]
						}
						n++
					}
				}
				if n >= 13 && n <= 19 && luhn(digits[:n]) && cardNetwork(digits[:n]) {
					emit(groups[a].start, groups[b].end)
					a = b
					break
				}
			}
		}
		next = j // the rest of the run starts no number
	}
}

// luhn is the check digit scheme of ISO/IEC 7812-1.
func luhn(digits []byte) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// cardNetwork reports whether digits start with the issuer identification
// number of a major card network and have one of its lengths.
func cardNetwork(digits []byte) bool {
	n := len(digits)
	prefix := func(k int) int {
		v := 0
		for _, d := range digits[:k] {
			v = v*10 + int(d-'0')
		}
		return v
	}
	in := func(k, lo, hi int) bool { p := prefix(k); return lo <= p && p <= hi }
	switch {
	case digits[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case in(2, 51, 55), in(4, 2221, 2720): // Mastercard
		return n == 16
	case in(2, 34, 34), in(2, 37, 37): // American Express
		return n == 15
	case in(4, 6011, 6011), in(3, 644, 649), in(2, 65, 65), in(6, 622126, 622925): // Discover
		return n >= 16
	case in(4, 3528, 3589): // JCB
		return n >= 16
	case in(3, 300, 305), in(2, 36, 36), in(2, 38, 39): // Diners Club
		return n >= 14
	case in(2, 62, 62): // UnionPay
		return n >= 16
	case in(4, 5018, 5018), in(4, 5020, 5020), in(4, 5038, 5038), in(4, 5893, 5893),
		in(4, 6304, 6304), in(4, 6759, 6759), in(4, 6761, 6763): // Maestro
		return n >= 12
	}
	return false
}

// IBANs: a country code, two check digits and the country's BBAN, whole or
// in groups of four separated by single spaces, of the length the IBAN
// registry gives for the country and passing ISO 13616's mod-97 check.

func scanIBANs(t string, runs []int, emit func(start, end int)) {
	next := 0
	for _, d := range runs {
		i := d - 2 // the check digits start a run
		if i < next || i < 0 || i+4 > len(t) || !isUpper(t[i]) || !isUpper(t[i+1]) || !isDigit(t[i+3]) || !boundaryBefore(t, i, "") {
			continue
		}
		want, ok := ibanLengths[t[i:i+2]]
		if !ok {
			continue
		}
		var chars [34]byte
		n, j := 0, i
		for j < len(t) && n < want {
			c := t[j]
			if isDigit(c) || isUpper(c) {
				chars[n] = c
				n++
				j++
				continue
			}
			// A space only between groups of four.
			if c == ' ' && n%4 == 0 && j+1 < len(t) && (isDigit(t[j+1]) || isUpper(t[j+1])) {
				j++
				continue
			}
			break
		}
		if n == want && boundaryAfter(t, j, "") && mod97(chars[:n]) {
			emit(i, j)
			next = j
		}
	}
}

// mod97 is the ISO 7064 MOD 97-10 check of an IBAN.
func mod97(iban []byte) bool {
	r := 0
	add := func(c byte) {
		if isDigit(c) {
			r = (r*10 + int(c-'0')) % 97
		} else {
			r = (r*100 + int(c-'A'+10)) % 97
		}
	}
	for _, c := range iban[4:] {
		add(c)
	}
	for _, c := range iban[:4] {
		add(c)
	}
	return r == 1
}

// ibanLengths are the IBAN lengths by country of the SWIFT IBAN registry
// (release 99, 2025).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BI": 27,
	"BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DJ": 27, "DK": 18, "DO": 28,
	"EE": 20, "EG": 29, "ES": 24, "FI": 18, "FK": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
	"GL": 18, "GR": 27, "GT": 28, "HN": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
	"IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21,
	"LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MN": 20, "MR": 27, "MT": 31, "MU": 30, "NI": 28,
	"NL": 18, "NO": 15, "OM": 23, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22,
	"RU": 33, "SA": 24, "SC": 31, "SD": 18, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "SO": 23, "ST": 25,
	"SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20, "YE": 30,
}

// US social security numbers: three, two and four digits separated by
// hyphens or by spaces, with the SSA's rules: no all-zero group, no area
// 666 or 900-999, and not one of the numbers the SSA voided after they
// were printed in advertising.

func scanSSNs(t string, runs []int, emit func(start, end int)) {
	for _, i := range runs {
		if i+11 > len(t) {
			break
		}
		if !boundaryBefore(t, i, "-.") {
			continue
		}
		s := t[i : i+11]
		sep := s[3]
		if sep != '-' && sep != ' ' || s[6] != sep || !boundaryAfter(t, i+11, "-") ||
			i+11 < len(t) && t[i+11] == '.' && i+12 < len(t) && isDigit(t[i+12]) {
			continue
		}
		if !allDigits(s[:3]) || !allDigits(s[4:6]) || !allDigits(s[7:]) {
			continue
		}
		area, group, serial := s[:3], s[4:6], s[7:]
		if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
			continue
		}
		if d := area + group + serial; d == "078051120" || d == "219099999" || d == "457555462" {
			continue
		}
		emit(i, i+11)
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// IPv4 addresses: four decimal octets without leading zeros.

func scanIPv4(t string, runs []int, emit func(start, end int)) {
	next := 0
	for _, i := range runs {
		if i < next || !boundaryBefore(t, i, ".") {
			continue
		}
		j := i
		ok := true
		for part := 0; part < 4 && ok; part++ {
			if part > 0 {
				if j >= len(t) || t[j] != '.' {
					ok = false
					break
				}
				j++
			}
			k := j
			for k < len(t) && k-j < 4 && isDigit(t[k]) {
				k++
			}
			n := k - j
			if n == 0 || n > 3 || n > 1 && t[j] == '0' || n == 3 && t[j:k] > "255" {
				ok = false
			}
			j = k
		}
		if ok && boundaryAfter(t, j, "") && !(j+1 < len(t) && t[j] == '.' && isDigit(t[j+1])) {
			emit(i, j)
			next = j
			continue
		}
		for next = i; next < len(t) && (isDigit(t[next]) || t[next] == '.'); next++ {
		}
	}
}

// Phone numbers: in international form, "+" and 8 to 15 digits in groups
// separated by single spaces, hyphens or dots, a group possibly in
// parentheses; in national form (a region is configured), 9 to 15 digits
// in at least three such groups or with a parenthesized area code.
// Separators keep ordinary numbers out; the candidate must then be a valid
// number of its country's numbering plan.

type phoneScanner struct {
	region string // national numbers of this region; "" for none
}

// scan charges phoneCost to budget for every candidate it checks, and
// stops when the budget runs out.
func (p phoneScanner) scan(t string, runs []int, budget *int, emit func(start, end int)) {
	next := 0
	for _, i := range runs {
		if i > 0 && (t[i-1] == '+' || t[i-1] == '(') {
			i-- // a number starts with its "+" or "("
		}
		if i < next {
			continue
		}
		plus := t[i] == '+'
		if !boundaryBefore(t, i, "+.-/_") {
			continue
		}
		if !plus && p.region == "" {
			continue
		}
		end, digits, groups, paren := phoneRun(t, i+btoi(plus))
		if end < 0 || !boundaryAfter(t, end, "") {
			next = max(next, end)
			continue
		}
		region := p.region
		if plus {
			region = "ZZ"
		}
		if plus && digits >= 8 && digits <= 15 || !plus && digits >= 9 && digits <= 15 && (groups >= 3 || paren && groups >= 2) {
			if *budget -= phoneCost; *budget < 0 {
				return
			}
			if validPhone(t[i:end], region) {
				emit(i, end)
			}
		}
		next = end
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// phoneRun reads groups of digits from i, separated by one space, hyphen
// or dot, one of them possibly in parentheses. It returns where they end
// (after the last digit or parenthesis), the digits, the groups and
// whether a group was in parentheses; end is -1 when there is no digit.
func phoneRun(t string, i int) (end, digits, groups int, paren bool) {
	end = -1
	for j := i; j < len(t); {
		open := t[j] == '(' && !paren
		if open {
			j++
		}
		k := j
		for k < len(t) && isDigit(t[k]) {
			k++
		}
		if k == j {
			break
		}
		n := k - j
		if open {
			if k >= len(t) || t[k] != ')' {
				break
			}
			paren = true
			k++
		}
		digits += n
		groups++
		end = k
		switch {
		case k+1 < len(t) && (t[k] == ' ' || t[k] == '-' || t[k] == '.') && (isDigit(t[k+1]) || t[k+1] == '(' && !paren):
			j = k + 1
		case open && k < len(t) && isDigit(t[k]): // "+44 (0)20 7946 0958"
			j = k
		default:
			return end, digits, groups, paren
		}
	}
	return end, digits, groups, paren
}

// validPhone asks libphonenumber whether s is a valid number, in region
// when it has no country code.
func validPhone(s, region string) bool {
	if len(s) > phonenumbers.MAX_INPUT_STRING_LENGTH {
		return false
	}
	n, err := phonenumbers.Parse(s, region)
	return err == nil && phonenumbers.IsValidNumber(n)
}
