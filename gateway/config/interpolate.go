package config

import (
	"fmt"
	"path/filepath"
	"strings"
)

// maxExpanded bounds a string after interpolation.
const maxExpanded = 1 << 20

// vars resolves ${...} in string values.
//
//   - ${NAME} and ${env:NAME}: the environment variable NAME; an unset one
//     is an error. ${NAME:-default} gives default when NAME is unset or
//     empty.
//   - $${ is a literal ${.
//   - In the files of editors (mcpServers, VS Code) also ${userHome},
//     ${workspaceFolder} (the folder holding .vscode/ or .cursor/, else
//     the file's folder), ${workspaceFolderBasename}, ${pathSeparator} and
//     ${/}.
//   - In VS Code files, ${input:ID}: the environment variable ID, or ID in
//     upper case with other characters as "_", or the input's default;
//     nobody can be prompted, so without either it is an error.
type vars struct {
	env    func(string) (string, bool)
	editor bool
	dir    string           // the config file's directory, for ${workspaceFolder}
	inputs map[string]input // VS Code inputs by id; nil in other formats
	vscode bool
}

type input struct {
	def    string
	hasDef bool
}

// expand returns s with every ${...} resolved, whether anything was, and
// the problem with the first one that cannot be.
func (v *vars) expand(s string) (string, bool, error) {
	if !strings.Contains(s, "${") {
		return s, false, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
			continue
		case !strings.HasPrefix(s[i:], "${"):
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", false, fmt.Errorf("unterminated ${ (write $${ for a literal ${)")
		}
		val, err := v.lookup(s[i+2 : i+2+end])
		if err != nil {
			return "", false, err
		}
		if b.Len()+len(val) > maxExpanded {
			return "", false, fmt.Errorf("longer than %d bytes once variables are replaced", maxExpanded)
		}
		b.WriteString(val)
		i += 2 + end + 1
	}
	return b.String(), true, nil
}

func (v *vars) lookup(expr string) (string, error) {
	name, def, hasDef := strings.Cut(expr, ":-")
	kind, rest, scoped := strings.Cut(name, ":")
	switch {
	case scoped && kind == "env":
		return v.envVar(rest, def, hasDef)
	case scoped && kind == "input" && v.vscode:
		return v.input(rest)
	case scoped:
		return "", fmt.Errorf("${%s} is an editor variable that cannot be resolved outside the editor (allowed: ${NAME}, ${env:NAME}, ${NAME:-default}%s)", printable(expr), v.editorNames())
	case v.editor && name == "userHome":
		home, ok := v.env("HOME")
		if !ok || home == "" {
			home, ok = v.env("USERPROFILE")
		}
		if !ok || home == "" {
			return "", fmt.Errorf("${userHome}: neither HOME nor USERPROFILE is set")
		}
		return home, nil
	case v.editor && name == "workspaceFolder":
		return v.workspace(), nil
	case v.editor && name == "workspaceFolderBasename":
		return filepath.Base(v.workspace()), nil
	case v.editor && (name == "pathSeparator" || name == "/"):
		return string(filepath.Separator), nil
	}
	return v.envVar(name, def, hasDef)
}

func (v *vars) editorNames() string {
	switch {
	case v.vscode:
		return ", ${input:ID}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator}"
	case v.editor:
		return ", ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator}"
	}
	return ""
}

func (v *vars) envVar(name, def string, hasDef bool) (string, error) {
	if !validEnvName(name) {
		return "", fmt.Errorf("%s is not a variable name (letters, digits and _, not starting with a digit)", quote(name))
	}
	val, ok := v.env(name)
	if hasDef && (!ok || val == "") {
		return def, nil
	}
	if !ok {
		switch name {
		case "userHome", "workspaceFolder", "workspaceFolderBasename", "pathSeparator":
			return "", fmt.Errorf("environment variable %s is not set (${%s} is an editor's variable, read in mcpServers and VS Code files only)", name, name)
		}
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return val, nil
}

func (v *vars) input(id string) (string, error) {
	upper := envNameOf(id)
	for _, name := range []string{id, upper} {
		if val, ok := v.env(name); ok {
			return val, nil
		}
	}
	in, defined := v.inputs[id]
	if defined && in.hasDef {
		return in.def, nil
	}
	also := ""
	if upper != id {
		also = " or " + quote(id)
	}
	if !defined {
		return "", fmt.Errorf("${input:%s} is not defined in inputs, and preflight cannot prompt for it: set %s%s in the environment", printable(id), upper, also)
	}
	return "", fmt.Errorf("${input:%s} has no default, and preflight cannot prompt for it: set %s%s in the environment", printable(id), upper, also)
}

// workspace is the folder VS Code or Cursor would call the workspace
// folder of the file.
func (v *vars) workspace() string {
	if base := filepath.Base(v.dir); base == ".vscode" || base == ".cursor" {
		return filepath.Dir(v.dir)
	}
	return v.dir
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// envNameOf returns id in upper case with every character other than a
// letter or digit replaced by "_".
func envNameOf(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, id)
}
