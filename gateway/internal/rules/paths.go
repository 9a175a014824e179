package rules

import (
	"path"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// cleanPathFunction declares the CEL function cleanPath(string) string,
// with which rules match paths.
func cleanPathFunction() cel.EnvOption {
	return cel.Function("cleanPath",
		cel.Overload("cleanPath_string", []*cel.Type{cel.StringType}, cel.StringType,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				return types.String(cleanPath(string(s)))
			})))
}

// cleanPath returns p as a filesystem server resolves it before opening
// it, for rules to match: "/" and "\" are both separators (as a server on
// Windows reads them) and come out as "/"; repeated separators, "."
// segments and a trailing separator go, and ".." removes the segment
// before it (path.Clean). ".env/", ".env/.", "./.env" and "dir/../.env"
// all come out as ".env". Which file a symbolic link names, and whether
// names are case-insensitive, only the server's filesystem knows.
func cleanPath(p string) string {
	return path.Clean(strings.ReplaceAll(p, `\`, "/"))
}
