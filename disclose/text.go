package disclose

import "strings"

// ResourceName is the name of the tool_descriptions resource in
// resources/list, as in seed 004 section 11.2.
const ResourceName = "Tool Descriptions - Required for tool use"

// ResourceDescription is the description of the tool_descriptions
// resource at uri. It gives the workflow seed 004 section 4.2 asks for: how
// the resource relates to tools/list, that descriptions must be fetched
// before calling, the query syntax with concrete examples, what happens
// without fetching, and that fetching authorizes the tool.
func ResourceDescription(uri string) string {
	r := strings.NewReplacer("{uri}", uri)
	return r.Replace("WORKFLOW: " +
		"Step 1: Pick a tool from tools/list by what its short description says it does; the listing is for choosing a tool, not for learning its parameters. " +
		"Step 2: Fetch the full description of each tool you picked before calling it: {uri}?tools=TOOL_NAME, or several at once with comma-separated names exactly as in tools/list, {uri}?tools=tool1,tool2. " +
		"The result is a JSON object mapping each name to its full definition: complete input schema, examples, usage and error guidance. " +
		"Step 3: Call the tool with the parameters you learned. " +
		"Fetching a description authorizes that tool for the rest of your session (without sessions: for your authenticated identity). " +
		"Calling a tool whose description you did not fetch fails with TOOL_DESCRIPTION_REQUIRED and the URI to fetch. " +
		"Always name the tools: reading {uri} without ?tools= fails with MISSING_TOOL_SELECTION.")
}

// Instructions is the system-prompt guidance of seed 004 section 8 for the
// tool_descriptions resource at uri: the two-stage workflow, that the short
// descriptions are enough to choose a tool, that the resource must never be
// read without naming tools, and the syntax, with examples. A [Server]
// appends it to the server's instructions in initialize (legacy) and
// server/discover (2026-07-28) unless [Options.OmitInstructions]; agents
// that do not show server instructions to their model can put it in their
// system prompt.
func Instructions(uri string) string {
	r := strings.NewReplacer("{uri}", uri)
	return r.Replace("This server lists its tools with short descriptions to save context. " +
		"Work in two stages. First, choose tools from tools/list: the short descriptions are sufficient to decide which tool fits the task. " +
		"Second, before calling a tool, read its full description (parameters, examples, error guidance) from the resource {uri}?tools=TOOL_NAME; " +
		"for several tools, separate their names with commas, exactly as listed: {uri}?tools=tool1,tool2. " +
		"Never read {uri} without the tools parameter; fetch only the tools you are about to use. " +
		"A fetched description authorizes its tool for the rest of the session; a call made before fetching fails with TOOL_DESCRIPTION_REQUIRED, and its resource_uri is the URI to read.")
}
