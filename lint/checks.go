package lint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Severity is how much a finding matters. A run fails when a finding is at
// or above the severity it was asked to fail at.
type Severity int

// Severities, from least to most severe.
const (
	Info Severity = iota + 1
	Warning
	Error
)

var severityNames = map[Severity]string{Info: "info", Warning: "warning", Error: "error"}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Severity(%d)", int(s))
}

// ParseSeverity reads "error", "warning" or "info".
func ParseSeverity(s string) (Severity, error) {
	for v, n := range severityNames {
		if n == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: want error, warning or info", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// sarifLevel is the SARIF 2.1.0 level of a severity.
func (s Severity) sarifLevel() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// A Check is one thing lint looks for.
type Check struct {
	// ID names the check in findings, in the configuration file and in
	// SARIF rules. It never changes.
	ID string `json:"id"`
	// Severity is the severity of every finding of the check.
	Severity Severity `json:"severity"`
	// Explanation says in one line what is wrong and why it matters.
	Explanation string `json:"explanation"`
	// Fix says in one line what to do about it.
	Fix string `json:"fix"`
	// Live reports whether the check needs a running server (it probes
	// tools/resolve or reads the handshake); catalogs skip it.
	Live bool `json:"live"`
}

// Check IDs.
const (
	CheckToolName               = "tool-name"
	CheckDescriptionMissing     = "description-missing"
	CheckInputSchemaObject      = "input-schema-object"
	CheckNoAnnotations          = "no-annotations"
	CheckDestructiveImplicit    = "destructive-implicit"
	CheckDestructiveUnconfirmed = "destructive-unconfirmed"
	CheckHintInvalid            = "hint-invalid"
	CheckHintContradiction      = "hint-contradiction"
	CheckReadOnlyWriteName      = "readonly-write-name"
	CheckReadNameNotReadOnly    = "read-name-not-readonly"
	CheckCapabilityMissing      = "resolve-capability-missing"
	CheckMarkerMissing          = "resolve-marker-missing"
	CheckResolveMalformed       = "resolve-malformed"
	CheckResolveBounds          = "resolve-bounds"
	CheckNotWorstCase           = "resolve-not-worst-case"
	CheckNondeterministic       = "resolve-nondeterministic"
	CheckAcceptsInvalid         = "resolve-accepts-invalid"
	CheckInvalidCode            = "resolve-invalid-code"
	CheckResolveFailed          = "resolve-failed"
)

// Checks lists every check, in the order findings are reported within a
// tool.
var Checks = []Check{
	{ID: CheckToolName, Severity: Error,
		Explanation: "the tool name is empty, longer than 128 characters, uses characters outside A-Z a-z 0-9 _ - . (the spec's tool name rules), or is not unique; clients refuse or mangle such names",
		Fix:         "rename the tool to 1-128 characters from A-Z a-z 0-9 _ - . and keep names unique within the server"},
	{ID: CheckDescriptionMissing, Severity: Warning,
		Explanation: "the tool has no description, so neither the model nor a person can tell what it does",
		Fix:         "add a description that says what the tool does and what it changes"},
	{ID: CheckInputSchemaObject, Severity: Error,
		Explanation: `the input schema is missing or its type is not "object"; the spec requires an object schema for the arguments`,
		Fix:         `declare inputSchema as {"type":"object","properties":{...}} (an empty object schema for a tool without arguments)`},
	{ID: CheckNoAnnotations, Severity: Warning,
		Explanation: "the tool sets none of readOnlyHint, destructiveHint, idempotentHint, openWorldHint, so clients must assume the worst: a destructive, non-idempotent, open-world call",
		Fix:         "declare the annotations: readOnlyHint true for reads; otherwise destructiveHint, idempotentHint and openWorldHint explicitly"},
	{ID: CheckDestructiveImplicit, Severity: Warning,
		Explanation: "the tool is not read-only and leaves destructiveHint unset, so it is destructive only by the protocol's default; clients cannot tell an additive write from a destructive one",
		Fix:         "set destructiveHint explicitly: false for additive writes, true (with mcp.dev/requiresConfirmation: true) for destructive ones"},
	{ID: CheckDestructiveUnconfirmed, Severity: Error,
		Explanation: "the tool is destructive (declared, a delete effect, or resolved so for some arguments) but does not set mcp.dev/requiresConfirmation: true (seed 002: destructive tools always declare it)",
		Fix:         `set "mcp.dev/requiresConfirmation": true in the tool's _meta (and in the resolution of every destructive variant), or declare the call non-destructive if it is`},
	{ID: CheckHintInvalid, Severity: Error,
		Explanation: "an mcp.dev/ policy hint has a value outside its vocabulary; clients ignore it",
		Fix:         "use effect read|write|external|delete, resultSensitivity public|internal|confidential|restricted, and JSON booleans for idempotent and requiresConfirmation"},
	{ID: CheckHintContradiction, Severity: Error,
		Explanation: "a policy hint contradicts the annotations (for example effect read on a tool that is not read-only, or delete on one that is not destructive); clients trust the annotations and the hint misleads people",
		Fix:         "make the hint and the annotations say the same thing: fix whichever of the two is wrong"},
	{ID: CheckReadOnlyWriteName, Severity: Warning,
		Explanation: "the tool's name starts with a verb that changes things (delete, create, update, ...) but it is declared read-only, so clients run it without asking",
		Fix:         "if the tool changes anything, set readOnlyHint false and declare destructiveHint; if it does not, rename it"},
	{ID: CheckReadNameNotReadOnly, Severity: Info,
		Explanation: "the tool's name starts with a reading verb (get, list, search, ...) but it is not declared read-only, so clients ask for confirmation of what may be a plain read",
		Fix:         "if the tool changes nothing, set readOnlyHint: true"},
	{ID: CheckCapabilityMissing, Severity: Error, Live: true,
		Explanation: "tools are marked resolvable but the server does not declare the matching capability (capabilities.extensions[\"io.modelcontextprotocol/tool-resolution\"] for the _meta marker, capabilities.tools.resolve for the seed's top-level resolve) or does not implement tools/resolve, so clients never resolve them",
		Fix:         "declare the capability of each marker shape the server sends and serve tools/resolve, or drop the markers"},
	{ID: CheckMarkerMissing, Severity: Warning, Live: true,
		Explanation: "the server declares a tool-resolution capability but marks no tool resolvable in that shape, so clients never send tools/resolve",
		Fix:         "mark the resolvable tools (the _meta marker {\"resolvable\":true}, or the seed's top-level \"resolve\": true), or stop declaring the capability"},
	{ID: CheckResolveMalformed, Severity: Error, Live: true,
		Explanation: "a tools/resolve result is not in the shape the client asked for: the extension shape needs resultType complete, the tool's name and all four annotations; the seed shape needs {tool} with the same name",
		Fix:         "answer in the extension shape when the request declares io.modelcontextprotocol/tool-resolution and in the seed shape otherwise, with every required field"},
	{ID: CheckResolveBounds, Severity: Error, Live: true,
		Explanation: "a resolution is riskier than the static declaration in tools/list (the extension's monotonic bounds, or a more severe effect, a more sensitive result or a call no longer idempotent where the static hints say so); servers withhold it and clients reject it",
		Fix:         "make the static annotations and hints the worst case of every resolution (a resolve.Table derives them), or fix the resolution"},
	{ID: CheckNotWorstCase, Severity: Warning, Live: true,
		Explanation: "the static annotations are more conservative than every resolution probed, so clients that do not resolve ask for confirmation needlessly (only as good as the argument values lint could enumerate)",
		Fix:         "declare statically the worst case of the resolutions (preflight.WorstCase), or make the variants that justify the static value reachable from the input schema's enums and examples"},
	{ID: CheckNondeterministic, Severity: Warning, Live: true,
		Explanation: "two tools/resolve requests with identical arguments, one after the other, got different annotations or hints (the seed requires identical results within a session)",
		Fix:         "resolve from the arguments and stable state only; remember function resolutions per session"},
	{ID: CheckAcceptsInvalid, Severity: Error, Live: true,
		Explanation: "tools/resolve answered with a resolution for arguments that break the input schema (or for a tool that does not exist); clients then trust a call that tools/call would refuse",
		Fix:         "validate the arguments against the input schema and answer -32602 naming the field"},
	{ID: CheckInvalidCode, Severity: Warning, Live: true,
		Explanation: "tools/resolve refused invalid arguments with an error other than -32602, so clients take it for a server failure and fall back to the static annotations instead of fixing the arguments",
		Fix:         "answer invalid arguments and unknown tools with -32602 (invalid params)"},
	{ID: CheckResolveFailed, Severity: Warning, Live: true,
		Explanation: "tools/resolve failed for arguments that are valid against the input schema; clients fall back to the static annotations",
		Fix:         "make the resolver answer every valid call, or refuse arguments it cannot resolve with -32602 and say why"},
}

// LookupCheck returns the check with the given id.
func LookupCheck(id string) (Check, bool) {
	i := slices.IndexFunc(Checks, func(c Check) bool { return c.ID == id })
	if i < 0 {
		return Check{}, false
	}
	return Checks[i], true
}

func checkIndex(id string) int {
	return slices.IndexFunc(Checks, func(c Check) bool { return c.ID == id })
}

func checkIDs() string {
	ids := make([]string, len(Checks))
	for i, c := range Checks {
		ids[i] = c.ID
	}
	return strings.Join(ids, ", ")
}

// A Finding is one problem lint found.
type Finding struct {
	// Check is the id of the check that found it.
	Check string `json:"check"`
	// Severity is the check's severity.
	Severity Severity `json:"severity"`
	// Tool is the tool the finding is about; empty for the server as a
	// whole.
	Tool string `json:"tool,omitempty"`
	// Arguments are the arguments of the tools/resolve request the finding
	// is about, if any.
	Arguments map[string]any `json:"arguments,omitempty"`
	// Shape is the tool-resolution shape of that request: "extension" or
	// "seed".
	Shape string `json:"shape,omitempty"`
	// Message says what was found, in one line.
	Message string `json:"message"`
	// Fix is the check's fix.
	Fix string `json:"fix"`
	// Line is the line of the tool in a catalog file, 0 if unknown.
	Line int `json:"line,omitempty"`
	// Suppressed is the configuration's reason when an ignore entry
	// silenced the finding.
	Suppressed string `json:"suppressed,omitempty"`
}

func newFinding(id string, tool *Tool, format string, args ...any) Finding {
	c, ok := LookupCheck(id)
	if !ok {
		panic("lint: unknown check " + id)
	}
	f := Finding{Check: id, Severity: c.Severity, Message: fmt.Sprintf(format, args...), Fix: c.Fix}
	if tool != nil {
		f.Tool, f.Line = tool.Name, tool.Line
	}
	return f
}

func (f Finding) about(args map[string]any, shape string) Finding {
	f.Arguments, f.Shape = args, shape
	return f
}

// argsText is compact JSON of arguments, for messages.
func argsText(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	return string(b)
}
