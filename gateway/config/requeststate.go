package config

import (
	"fmt"
	"strings"

	"github.com/preflightmcp/preflight/requeststate"
)

// maxKeysFile bounds a requestState keys file.
const maxKeysFile = 64 << 10

// minDistinctSecretBytes is the fewest distinct byte values a secret may
// hold: 32 random bytes hold about 30, so fewer than 16 means the secret
// is not random (a repeated character, a word, a counter).
const minDistinctSecretBytes = 16

// RequestState says how the gateway seals the requestState it gives
// 2026-07-28 clients (package requeststate). Its zero value means a random
// key for each process: right for one gateway, but replicas must share
// keys, or each refuses the others' state.
type RequestState struct {
	// KeysEnv names the environment variable holding the keys, in
	// requeststate.ParseKeys's syntax: "ID:SECRET" entries separated by
	// commas, the sealing key first, each SECRET the base64 of at least 32
	// random bytes.
	KeysEnv string `json:"keysEnv,omitempty"`
	// KeysFile is a file holding the keys in the same syntax (a mounted
	// secret). [Load] reads it; [Parse] does no I/O and only records the
	// path, relative to the config file's directory.
	KeysFile string `json:"keysFile,omitempty"`
	// Keys are the keys read, checked: never written out, never in an
	// error message.
	Keys []requeststate.Key `json:"-"`
}

// IsZero reports whether r names no keys.
func (r RequestState) IsZero() bool { return r.KeysEnv == "" && r.KeysFile == "" }

// String describes r without its secrets.
func (r RequestState) String() string {
	ids := make([]string, len(r.Keys))
	for i, k := range r.Keys {
		ids[i] = k.ID
	}
	return fmt.Sprintf("requestState{keysEnv: %q, keysFile: %q, keys: [%s]}", r.KeysEnv, r.KeysFile, strings.Join(ids, " "))
}

// GoString describes r without its secrets.
func (r RequestState) GoString() string { return r.String() }

// requestState checks the requestState section and reads its keys.
func (p *parser) requestState(r *RequestState) {
	const at = "requestState"
	switch {
	case r.KeysEnv != "" && r.KeysFile != "":
		p.fail(at, "sets both keysEnv and keysFile: keep one")
		return
	case r.IsZero():
		p.fail(at, "sets neither keysEnv nor keysFile: leave requestState out for a random key per process (one gateway only), or name the keys replicas share")
		return
	}
	r.KeysFile = p.resolve(r.KeysFile)
	r.Keys = p.readKeys(at, r.KeysEnv, r.KeysFile)
}

// readKeys reads the keys named by an environment variable or a file (the
// other ""), as ParseRequestStateKeys parses them; errors go under at.
func (p *parser) readKeys(at, env, file string) []requeststate.Key {
	v, where := "", ""
	if env != "" {
		if !validEnvName(env) {
			p.fail(at+".keysEnv", "%s is not an environment variable name (letters, digits and _, not starting with a digit)", quote(env))
			return nil
		}
		val, ok := p.env(env)
		if !ok || strings.TrimSpace(val) == "" {
			p.fail(at+".keysEnv", "environment variable %s is not set: give it ID:SECRET, such as k1:$(openssl rand -base64 32)", env)
			return nil
		}
		v, where, at = val, "environment variable "+env, at+".keysEnv"
	} else {
		if !p.files {
			return nil
		}
		data, err := readFile(file, maxKeysFile)
		if err != nil {
			p.fail(at+".keysFile", "%s", err)
			return nil
		}
		if strings.TrimSpace(string(data)) == "" {
			p.fail(at+".keysFile", "%s is empty: give it ID:SECRET, such as k1:$(openssl rand -base64 32)", file)
			return nil
		}
		v, where, at = string(data), file, at+".keysFile"
	}
	keys, err := ParseRequestStateKeys(v)
	if err != nil {
		p.fail(at, "%s: %s", where, err)
		return nil
	}
	return keys
}

// ParseRequestStateKeys parses keys in requeststate.ParseKeys's syntax
// (lines may also separate entries) and refuses secrets that are not
// random: fewer than 32 bytes, or fewer than 16 distinct byte values.
// Errors name the key's ID, never its secret.
func ParseRequestStateKeys(s string) ([]requeststate.Key, error) {
	var entries []string
	for _, e := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	s = strings.Join(entries, ",")
	keys, err := requeststate.ParseKeys(s)
	if err != nil {
		msg, _ := strings.CutPrefix(err.Error(), "requeststate: ")
		return nil, fmt.Errorf("%s (make a secret with openssl rand -base64 32)", msg)
	}
	for _, k := range keys {
		var seen [256]bool
		n := 0
		for _, b := range k.Secret {
			if !seen[b] {
				seen[b] = true
				n++
			}
		}
		if n < minDistinctSecretBytes {
			return nil, fmt.Errorf("key %q: the secret is not random (%d distinct bytes in %d): make one with openssl rand -base64 32", k.ID, n, len(k.Secret))
		}
	}
	return keys, nil
}
