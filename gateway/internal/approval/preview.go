package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/preflightmcp/preflight/gateway/internal/redact"
	"github.com/preflightmcp/preflight/gateway/internal/text"
)

// Bounds of a preview (Preview) and of what the page shows (Show).
const (
	// DefaultPreviewArgs is how many arguments a preview shows.
	DefaultPreviewArgs = 16
	// DefaultPreviewValue is how many bytes of each value it shows.
	DefaultPreviewValue = 256
	// DefaultShowBytes bounds the arguments, as sent, that the page
	// shows whole; a call with more cannot be approved there.
	DefaultShowBytes = 64 << 10
	// maxNameBytes bounds an argument name and an approver's name.
	maxNameBytes = 128
	// maxReasonBytes bounds a reason.
	maxReasonBytes = 512
	// previewSlack is how much of a value past its cut a preview scans
	// for secrets, so that none shows in part at the cut.
	previewSlack = 1 << 10
)

// TargetNames are the argument names that say what a call acts on, most
// telling first: shown first after those a rule read.
var TargetNames = []string{"path", "file", "filename", "file_path", "filepath", "url", "uri", "table", "name",
	"folder", "directory", "dir", "key", "id", "target", "destination", "repo", "repository", "branch"}

// member is one top-level argument in the order the client sent it.
type member struct {
	name string
	raw  json.RawMessage
}

// Preview returns the arguments in brief, as the client's own
// confirmation shows them: as Show orders and withholds them, at most
// maxArgs (the number left out is returned), each value cut to maxValue
// bytes (Clipped). Zero bounds mean the defaults. A value the secret
// detectors could not check is withheld.
func Preview(args json.RawMessage, matter, sensitive []string, maxArgs, maxValue int) ([]Arg, int, error) {
	if maxArgs <= 0 {
		maxArgs = DefaultPreviewArgs
	}
	if maxValue <= 0 {
		maxValue = DefaultPreviewValue
	}
	members, err := arguments(args)
	if err != nil || members == nil {
		return nil, 0, err
	}
	ordered := order(members, matter)
	omitted := 0
	if len(ordered) > maxArgs {
		omitted = len(ordered) - maxArgs
		ordered = ordered[:maxArgs]
	}
	out := render(ordered, sensitive, maxValue+previewSlack)
	if !withholdSecrets(out) {
		for i := range out {
			out[i] = Arg{Name: out[i].Name, Withheld: true}
		}
	}
	cleanAll(out, maxNameBytes, maxValue)
	return out, omitted, nil
}

// Show returns the arguments as an approver sees them on the page: every
// one, whole, those named in matter first (in that order), then the
// others as sent, duplicates included. Values of arguments named in
// sensitive, or whose names look like credentials, are withheld at any
// depth; values that look like secrets (package redact's detectors) are
// replaced by "[REDACTED:kind]" (Arg.Secrets). Control and bidirectional
// characters are escaped. Arguments that are not a JSON object are shown
// as one entry named "(arguments)". More than maxBytes of arguments (zero:
// DefaultShowBytes), or arguments the detectors could not check, are a
// [NotShowableError]; invalid JSON is an error.
func Show(args json.RawMessage, matter, sensitive []string, maxBytes int) ([]Arg, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultShowBytes
	}
	if n := len(bytes.TrimSpace(args)); n > maxBytes {
		return nil, &NotShowableError{Why: fmt.Sprintf("its arguments are %s, more than the %s the page shows whole", kib(n), kib(maxBytes))}
	}
	members, err := arguments(args)
	if err != nil || members == nil {
		return nil, err
	}
	out := render(order(members, matter), sensitive, math.MaxInt)
	if !withholdSecrets(out) {
		return nil, &NotShowableError{Why: "its arguments could not be checked for secrets, or hold text a secret detector matched that has no secret's form"}
	}
	cleanAll(out, math.MaxInt, math.MaxInt)
	return out, nil
}

// ErrNotShowable: the page cannot show a call's arguments whole, so the
// call cannot be approved there.
var ErrNotShowable = errors.New("approval: the arguments cannot be shown whole on the page")

// NotShowableError says why a call cannot be approved on the page. It is
// ErrNotShowable.
type NotShowableError struct{ Why string }

func (e *NotShowableError) Error() string {
	return "approval: cannot be approved on the page: " + e.Why
}

// Is reports target is ErrNotShowable.
func (e *NotShowableError) Is(target error) bool { return target == ErrNotShowable }

func kib(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n/1024)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// arguments returns the members of args in order; nil for absent
// arguments; one member "(arguments)" for a JSON value that is not an
// object.
func arguments(args json.RawMessage) ([]member, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return nil, nil
	}
	members, err := topLevel(args)
	if err != nil || members != nil {
		return members, err
	}
	return []member{{name: "(arguments)", raw: args}}, nil
}

// order puts the members named in matter first, in matter's order.
func order(members []member, matter []string) []member {
	ordered := make([]member, 0, len(members))
	for _, m := range matter {
		for _, a := range members {
			if a.name == m {
				ordered = append(ordered, a)
			}
		}
	}
	for _, a := range members {
		if !slices.Contains(matter, a.name) {
			ordered = append(ordered, a)
		}
	}
	return ordered
}

// render renders each member's value, at most about limit bytes of it,
// uncleaned; withheld ones have no value.
func render(members []member, sensitive []string, limit int) []Arg {
	out := make([]Arg, 0, len(members))
	for _, a := range members {
		if redact.SensitiveName(a.name, sensitive) {
			out = append(out, Arg{Name: a.name, Withheld: true})
			continue
		}
		out = append(out, Arg{Name: a.name, Value: showValue(a.raw, sensitive, limit)})
	}
	return out
}

// cleanAll escapes the names and values of args and cuts them to their
// bounds (Clipped).
func cleanAll(args []Arg, maxName, maxValue int) {
	for i := range args {
		a := &args[i]
		a.Name, _ = text.EscapeCut(a.Name, maxName)
		a.Value, a.Clipped = text.EscapeCut(a.Value, maxValue)
	}
}

// topLevel returns the members of a JSON object in order, duplicates
// kept, or nil if data is another JSON value.
func topLevel(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("arguments: invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		if !json.Valid(data) {
			return nil, fmt.Errorf("arguments: invalid JSON")
		}
		return nil, nil
	}
	members := []member{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("arguments: invalid JSON: %w", err)
		}
		k, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("arguments: invalid JSON: %w", err)
		}
		members = append(members, member{name: k, raw: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("arguments: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("arguments: invalid JSON: data after the object")
	}
	return members, nil
}

// Withheld stands for a sensitive value inside a previewed value.
const Withheld = "[withheld]"

// showValue renders a JSON value for a person: a string as its text,
// anything else as compact JSON with the values of sensitive names
// withheld at any depth; about max bytes of it.
func showValue(raw json.RawMessage, sensitive []string, max int) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return text.Cut(s, max)
	}
	return compactWithheld(raw, sensitive, max)
}

// frame is an open object or array in compactWithheld.
type frame struct {
	object bool
	n      int  // members or elements written
	key    bool // in an object: the next string is a key
}

// compactWithheld writes raw (valid JSON) compactly, keys in their order,
// the value of each sensitive key replaced by Withheld; it stops soon
// after max bytes.
func compactWithheld(raw []byte, sensitive []string, max int) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	writeString := func(s string) {
		_ = enc.Encode(s) // a string always encodes
		b.Truncate(b.Len() - 1)
	}
	var stack []frame
	for b.Len() <= max {
		tok, err := dec.Token()
		if err != nil {
			break // io.EOF: the end (raw is valid JSON)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b.WriteByte(byte(d))
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			k, _ := tok.(string)
			if top.n > 0 {
				b.WriteByte(',')
			}
			writeString(k)
			b.WriteByte(':')
			top.n++
			if redact.SensitiveName(k, sensitive) {
				var skip json.RawMessage
				if dec.Decode(&skip) != nil {
					break
				}
				writeString(Withheld)
				continue
			}
			top.key = false
			continue
		}
		if top != nil {
			if !top.object && top.n > 0 {
				b.WriteByte(',')
			}
			if top.object {
				top.key = true
			} else {
				top.n++
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			stack = append(stack, frame{object: v == '{', key: true})
			b.WriteByte(byte(v))
		case string:
			writeString(v)
		case json.Number:
			b.WriteString(string(v))
		case bool:
			fmt.Fprint(&b, v)
		case nil:
			b.WriteString("null")
		}
	}
	return b.String()
}
