package config

import (
	"fmt"
	"strings"
)

// maxEnvFile bounds an env file.
const maxEnvFile = 1 << 20

// readEnvFile reads a file of NAME=value lines, as VS Code's and Cursor's
// envFile: blank lines and lines starting with # are skipped, "export "
// may start a line, and a value may be quoted ('...' as is, "..." with
// \n, \t, \" and \\ escapes) or bare (up to a " #" comment, trimmed).
func readEnvFile(path string) (map[string]string, error) {
	data, err := readFile(path, maxEnvFile)
	if err != nil {
		return nil, err
	}
	vals, err := parseEnvFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return vals, nil
}

// parseEnvFile parses an env file's content; an error starts with the
// line number.
func parseEnvFile(data []byte) (map[string]string, error) {
	vals := map[string]string{}
	for i, line := range strings.Split(strings.TrimPrefix(string(data), "\uFEFF"), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		if !ok || !validEnvName(name) {
			return nil, fmt.Errorf("%d: expected NAME=value, with a name of letters, digits and _", i+1)
		}
		value = strings.TrimSpace(value)
		switch {
		case strings.HasPrefix(value, "'"):
			end := strings.IndexByte(value[1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%d: %s: unterminated '", i+1, name)
			}
			value = value[1 : 1+end]
		case strings.HasPrefix(value, `"`):
			var b strings.Builder
			j := 1
			for ; j < len(value) && value[j] != '"'; j++ {
				if value[j] == '\\' && j+1 < len(value) {
					j++
					switch value[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(value[j])
					}
					continue
				}
				b.WriteByte(value[j])
			}
			if j >= len(value) {
				return nil, fmt.Errorf("%d: %s: unterminated \"", i+1, name)
			}
			value = b.String()
		default:
			if k := strings.Index(value, " #"); k >= 0 {
				value = strings.TrimSpace(value[:k])
			}
		}
		if strings.ContainsRune(value, 0) {
			return nil, fmt.Errorf("%d: %s: the value contains a NUL character", i+1, name)
		}
		vals[name] = value
	}
	return vals, nil
}
