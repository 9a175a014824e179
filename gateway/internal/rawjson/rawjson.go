// Package rawjson reads and edits the members of a JSON object in place,
// without decoding it: the gateway passes upstream results through byte for
// byte and only touches the members it must (a tool's name, a marker in
// _meta, resultType). Values other than the edited ones keep their exact
// bytes, so an explicit false stays false and key order is kept.
//
// Every function takes an object that has already been checked as valid
// JSON (the SDK decoded the message it came in). They refuse, with an error,
// input that is not shaped like a JSON object, but do not validate every
// byte (mismatched brackets inside a value go unnoticed); none of them
// panics on any input.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotObject is returned for input that is not a JSON object.
var ErrNotObject = errors.New("rawjson: not a JSON object")

// Member is one member of an object: its key (unquoted) and its value's
// exact bytes.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members returns the members of obj in order.
func Members(obj []byte) ([]Member, error) {
	var out []Member
	err := scan(obj, func(key []byte, quoted bool, _, _, vStart, vEnd int) bool {
		out = append(out, Member{Key: unquote(key, quoted), Value: obj[vStart:vEnd]})
		return true
	})
	return out, err
}

// IsObject reports whether obj is shaped like a JSON object.
func IsObject(obj []byte) bool {
	return scan(obj, func([]byte, bool, int, int, int, int) bool { return true }) == nil
}

// Get returns the value of the first member named key, and whether there is
// one.
func Get(obj []byte, key string) (json.RawMessage, bool, error) {
	var val json.RawMessage
	found := false
	err := scan(obj, func(k []byte, quoted bool, _, _, vStart, vEnd int) bool {
		if keyEqual(k, quoted, key) {
			val, found = obj[vStart:vEnd], true
			return false
		}
		return true
	})
	return val, found, err
}

// GetString returns the value of member key decoded as a string; ok is
// false if there is no such member or it is not a string.
func GetString(obj []byte, key string) (s string, ok bool, err error) {
	v, found, err := Get(obj, key)
	if err != nil || !found {
		return "", false, err
	}
	if len(v) == 0 || v[0] != '"' {
		return "", false, nil
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, nil
	}
	return s, true, nil
}

// Set returns a copy of obj in which member key has value val: the first
// member of that name is replaced in place, or, if there is none, the
// member is appended. val must be valid JSON.
func Set(obj []byte, key string, val []byte) ([]byte, error) {
	replaced := false
	var start, end int
	members := 0
	err := scan(obj, func(k []byte, quoted bool, _, _, vStart, vEnd int) bool {
		members++
		if !replaced && keyEqual(k, quoted, key) {
			replaced, start, end = true, vStart, vEnd
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if replaced {
		out := make([]byte, 0, len(obj)-(end-start)+len(val))
		out = append(out, obj[:start]...)
		out = append(out, val...)
		return append(out, obj[end:]...), nil
	}
	// Append before the closing brace.
	closing := bytes.LastIndexByte(obj, '}')
	qk, _ := json.Marshal(key)
	out := make([]byte, 0, len(obj)+len(qk)+len(val)+2)
	out = append(out, obj[:closing]...)
	if members > 0 {
		out = append(out, ',')
	}
	out = append(out, qk...)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, obj[closing:]...), nil
}

// Delete returns a copy of obj without the members named by keys (every
// occurrence). obj itself is returned when there is nothing to delete.
func Delete(obj []byte, keys ...string) ([]byte, error) {
	ms, err := Members(obj)
	if err != nil {
		return nil, err
	}
	kept := ms[:0:0]
	for _, m := range ms {
		drop := false
		for _, key := range keys {
			if m.Key == key {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(ms) {
		return obj, nil
	}
	return Object(kept), nil
}

// Object encodes members as a JSON object, in order. Values must be valid
// JSON.
func Object(members []Member) []byte {
	size := 2
	for _, m := range members {
		size += len(m.Key) + len(m.Value) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		qk, _ := json.Marshal(m.Key)
		out = append(out, qk...)
		out = append(out, ':')
		out = append(out, m.Value...)
	}
	return append(out, '}')
}

// Elements returns the elements of a JSON array, each as its exact bytes.
func Elements(arr []byte) ([]json.RawMessage, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, errors.New("rawjson: not a JSON array")
	}
	i = skipSpace(arr, i+1)
	var out []json.RawMessage
	if i < len(arr) && arr[i] == ']' {
		return out, trailing(arr, i+1)
	}
	for {
		start := i
		end, err := skipValue(arr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, arr[start:end])
		i = skipSpace(arr, end)
		if i >= len(arr) {
			return nil, errors.New("rawjson: unterminated array")
		}
		switch arr[i] {
		case ',':
			i = skipSpace(arr, i+1)
		case ']':
			return out, trailing(arr, i+1)
		default:
			return nil, fmt.Errorf("rawjson: unexpected %q in array", arr[i])
		}
	}
}

// scan calls fn for each member of obj with the key's bytes (without the
// quotes), whether the key holds escapes, and the offsets of the key
// (including quotes) and of the value. fn returns false to stop.
func scan(obj []byte, fn func(key []byte, escaped bool, kStart, kEnd, vStart, vEnd int) bool) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ErrNotObject
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return trailing(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return ErrNotObject
		}
		kStart := i
		kEnd, escaped, err := skipString(obj, i)
		if err != nil {
			return err
		}
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return ErrNotObject
		}
		vStart := skipSpace(obj, i+1)
		vEnd, err := skipValue(obj, vStart)
		if err != nil {
			return err
		}
		if !fn(obj[kStart+1:kEnd-1], escaped, kStart, kEnd, vStart, vEnd) {
			return nil
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) {
			return ErrNotObject
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return trailing(obj, i+1)
		default:
			return ErrNotObject
		}
	}
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errors.New("rawjson: data after the value")
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at b[i] (a quote)
// and whether it needs decoding (escapes or non-ASCII bytes, which
// encoding/json normalises when they are not valid UTF-8).
func skipString(b []byte, i int) (end int, escaped bool, err error) {
	for j := i + 1; j < len(b); j++ {
		if b[j] >= 0x80 {
			escaped = true
		}
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, nil
		}
	}
	return 0, false, errors.New("rawjson: unterminated string")
}

// skipValue returns the offset after the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("rawjson: missing value")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("rawjson: unterminated value")
	default:
		j := i
		for j < len(b) {
			switch b[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if j == i {
					return 0, fmt.Errorf("rawjson: unexpected %q", b[j])
				}
				return j, nil
			}
			j++
		}
		if j == i {
			return 0, errors.New("rawjson: missing value")
		}
		return j, nil
	}
}

func keyEqual(k []byte, escaped bool, key string) bool {
	if !escaped {
		return string(k) == key
	}
	return unquote(k, true) == key
}

func unquote(k []byte, escaped bool) string {
	if !escaped {
		return string(k)
	}
	var out string
	q := make([]byte, 0, len(k)+2)
	q = append(append(append(q, '"'), k...), '"')
	if json.Unmarshal(q, &out) != nil {
		return string(k)
	}
	return out
}

// Duplicate returns the first key that appears more than once among the
// members of obj, and whether there is one. Decoders disagree on which of
// two members of the same name wins, so a request routed by one of them
// and executed by another must have none.
func Duplicate(obj []byte) (string, bool, error) {
	var (
		keys [16]string
		seen = keys[:0]
		dup  string
		has  bool
	)
	err := scan(obj, func(k []byte, quoted bool, _, _, _, _ int) bool {
		key := unquote(k, quoted)
		for _, s := range seen {
			if s == key {
				dup, has = key, true
				return false
			}
		}
		seen = append(seen, key)
		return true
	})
	return dup, has, err
}
