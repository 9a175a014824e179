package pin

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"math"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memoKey returns the SHA-256 of an unambiguous encoding of what
// [Define] reads of t, walking the decoded values instead of marshaling
// and canonicalizing them. Equal keys mean equal definitions, so a
// tools/list that repeats a tool unchanged is recognised without
// computing its fingerprint again; the fingerprint itself is always the
// canonical one. Values of types a JSON decoder does not produce are
// encoded by encoding/json.
func memoKey(t *mcp.Tool) [32]byte {
	w := keyWriter{h: sha256.New()}
	w.str(t.Name)
	w.str(t.Title)
	w.str(t.Description)
	w.value(t.InputSchema)
	w.value(t.OutputSchema)
	if a := t.Annotations; a == nil {
		w.tag('n')
	} else {
		w.tag('a')
		w.str(a.Title)
		w.boolPtr(a.DestructiveHint)
		w.boolPtr(&a.IdempotentHint)
		w.boolPtr(a.OpenWorldHint)
		w.boolPtr(&a.ReadOnlyHint)
	}
	keys := make([]string, 0, 4)
	for k := range t.Meta {
		if pinnedMeta(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	w.tag('m')
	w.int(len(keys))
	for _, k := range keys {
		w.str(k)
		w.value(t.Meta[k])
	}
	var out [32]byte
	w.h.Sum(out[:0])
	return out
}

type keyWriter struct {
	h       hash.Hash
	buf     [9]byte
	scratch []byte // strings are copied here: h.Write([]byte(s)) would allocate
}

func (w *keyWriter) tag(c byte) { w.buf[0] = c; w.h.Write(w.buf[:1]) }

func (w *keyWriter) int(n int) {
	binary.LittleEndian.PutUint64(w.buf[1:], uint64(n))
	w.h.Write(w.buf[1:9])
}

func (w *keyWriter) str(s string) {
	w.tag('s')
	w.int(len(s))
	w.scratch = append(w.scratch[:0], s...)
	w.h.Write(w.scratch)
}

func (w *keyWriter) boolPtr(b *bool) {
	switch {
	case b == nil:
		w.tag('n')
	case *b:
		w.tag('t')
	default:
		w.tag('f')
	}
}

func (w *keyWriter) value(v any) {
	switch v := v.(type) {
	case nil:
		w.tag('n')
	case bool:
		w.boolPtr(&v)
	case string:
		w.str(v)
	case float64:
		w.tag('d')
		binary.LittleEndian.PutUint64(w.buf[1:], math.Float64bits(v))
		w.h.Write(w.buf[1:9])
	case []any:
		w.tag('[')
		w.int(len(v))
		for _, e := range v {
			w.value(e)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.tag('{')
		w.int(len(keys))
		for _, k := range keys {
			w.str(k)
			w.value(v[k])
		}
	case json.RawMessage:
		w.tag('r')
		w.int(len(v))
		w.h.Write(v)
	default:
		data, err := json.Marshal(v)
		if err != nil {
			data = nil // Define reports the error; a key that never matches a good one
		}
		w.tag('j')
		w.int(len(data))
		w.h.Write(data)
	}
}
