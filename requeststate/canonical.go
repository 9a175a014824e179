package requeststate

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of objects and arrays ArgumentsDigest
// accepts, the limit of the SDK's own decoder.
const maxDepth = 1000

// ArgumentsDigest returns the SHA-256 of the canonical JSON encoding of
// args, in base64url without padding (43 characters).
//
// args is JSON text if it is a json.RawMessage; any other value is
// marshaled with encoding/json first (so a []byte is a base64 string, not
// JSON text). nil, an empty json.RawMessage and JSON null digest like the
// empty object {}: absent arguments are no arguments.
//
// The canonical encoding has no insignificant whitespace; at every level
// object members are sorted by key. Keys are compared after Unicode simple
// case folding, and members whose keys are equal that way (exact
// duplicates too) keep their order: a decoder that matches keys without
// regard to case, or keeps the first or last duplicate, may read such
// objects differently in another order, so their order counts. Numbers are
// encoded by value: 1, 1.0, 10e-1 and float64(1) or json.Number("1") are
// the same; -0 is 0; big integers stay exact. Strings are JSON strings with
// only '"', '\\' and control characters escaped; invalid UTF-8 reads as
// U+FFFD, as encoding/json decodes it.
//
// It fails for invalid JSON, trailing data, nesting deeper than 1000, and
// values encoding/json cannot marshal.
func ArgumentsDigest(args any) (string, error) {
	canon, err := canonicalArguments(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func canonicalArguments(args any) ([]byte, error) {
	var data []byte
	switch v := args.(type) {
	case nil:
	case json.RawMessage:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("{}"), nil
	}
	v, err := parseCanonical(data)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if v == nil {
		return []byte("{}"), nil
	}
	return appendCanonical(make([]byte, 0, len(data)), v), nil
}

// A jsonObject is a JSON object with its members in canonical order.
type jsonObject []member

type member struct {
	key, fold string
	val       any
}

// parseCanonical parses one JSON value into nil, bool, string, json.Number,
// []any and jsonObject.
func parseCanonical(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // nil, bool, string or json.Number
	}
	if depth >= maxDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	switch d {
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return arr, nil
	case '{':
		obj := jsonObject{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			k, ok := kt.(string)
			if !ok { // unreachable: the decoder only returns strings here
				return nil, errors.New("invalid JSON: object key is not a string")
			}
			v, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{key: k, fold: foldKey(k), val: v})
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		// Stable: members whose keys fold alike keep their order.
		slices.SortStableFunc(obj, func(a, b member) int { return strings.Compare(a.fold, b.fold) })
		return obj, nil
	}
	return nil, fmt.Errorf("invalid JSON: unexpected %v", d) // unreachable
}

// foldKey maps every rune of s to the smallest rune of its simple case
// folding orbit, so that foldKey(a) == foldKey(b) exactly when
// strings.EqualFold(a, b), the rule of encoding/json's field matching.
func foldKey(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// The smallest of {a, A} is A; of {k, K, U+212A} K; of {s, S, U+017F} S.
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

func appendCanonical(dst []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, v)
	case string:
		return appendJSONString(dst, v)
	case json.Number:
		return appendNumber(dst, string(v))
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, e)
		}
		return append(dst, ']')
	case jsonObject:
		dst = append(dst, '{')
		for i, m := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, m.key)
			dst = append(dst, ':')
			dst = appendCanonical(dst, m.val)
		}
		return append(dst, '}')
	}
	panic(fmt.Sprintf("requeststate: unexpected %T in parsed JSON", v)) // unreachable
}

func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// appendNumber appends the canonical form of the JSON number s (valid JSON
// number syntax): an optional '-', the significant digits without leading
// or trailing zeros, and 'e' with the decimal exponent when it is not 0.
// Zero is "0".
func appendNumber(dst []byte, s string) []byte {
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return append(dst, '0')
	}
	trimmed := strings.TrimRight(digits, "0")
	// The value is trimmed × 10^(exp + shift).
	shift := int64(len(digits)-len(trimmed)) - int64(len(frac))
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, trimmed...)
	if len(exp) <= 18 { // fits an int64 with room for shift
		e := shift
		if exp != "" {
			x, _ := strconv.ParseInt(exp, 10, 64) // syntax checked by the decoder
			e += x
		}
		if e != 0 {
			dst = append(dst, 'e')
			dst = strconv.AppendInt(dst, e, 10)
		}
		return dst
	}
	e, _ := new(big.Int).SetString(strings.TrimPrefix(exp, "+"), 10)
	e.Add(e, big.NewInt(shift))
	if e.Sign() != 0 {
		dst = append(dst, 'e')
		dst = e.Append(dst, 10)
	}
	return dst
}
