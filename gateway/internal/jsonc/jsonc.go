// Package jsonc reads JSON with comments and trailing commas (JSONC), as
// editors and the clients' settings files write it, by blanking them out
// so that a JSON decoder's offsets still point into the original text.
package jsonc

import "bytes"

// Strip replaces comments and trailing commas with spaces, keeping
// every offset and line. It returns the offset of an unterminated block
// comment, or -1.
func Strip(data []byte) ([]byte, int) {
	out := bytes.Clone(data)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if out[i] != '\n' && out[i] != '\r' {
				out[i] = ' '
			}
		}
	}
	comma := -1 // offset of a comma that may be trailing
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			comma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			end := bytes.IndexByte(out[i:], '\n')
			if end < 0 {
				end = len(out) - i
			}
			blank(i, i+end)
			i += end - 1
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			end := bytes.Index(out[i+2:], []byte("*/"))
			if end < 0 {
				return nil, i
			}
			blank(i, i+2+end+2)
			i += 2 + end + 1
		case c == ',':
			comma = i
		case c == '}' || c == ']':
			if comma >= 0 {
				out[comma] = ' '
			}
			comma = -1
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		default:
			comma = -1
		}
	}
	return out, -1
}
