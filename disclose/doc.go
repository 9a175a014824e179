// Package disclose implements progressive disclosure of tool descriptions
// (seed 004, "MCP Extension: Progressive Disclosure for Tool Descriptions"
// 2.1) for Go MCP servers built on the official SDK.
//
// Large tool catalogs fill a model's context before any work starts. With
// this extension tools/list carries only what a model needs to choose a
// tool; the full definitions are a resource the model reads for the tools
// it picked; and a tool cannot be called before its description was read.
//
// # Server
//
// [New] installs everything on an [mcp.Server]:
//
//   - tools/list lists every tool through [Minimal]: a short description
//     (the author's, in _meta under [MetaShortDescription], or the first
//     sentence of the description, within [ShortDescriptionLimit]) and an
//     input schema simplified to [Options.Schema] ({"type":"object"} by
//     default) and annotations reduced to the values that differ from the
//     protocol's defaults ([MinimalAnnotations]: a read-only tool needs
//     readOnlyHint alone). Name, title, icons and _meta stay, so tool
//     resolution's markers and policy hints survive. Arguments are still
//     validated against the registered schema.
//   - resources/list shows the tool_descriptions resource ([DefaultURI]),
//     named [ResourceName], described by [ResourceDescription] (the
//     workflow), application/json, with the descriptions' version in its
//     _meta ([MetaVersion]); a resource template advertises the query.
//   - resources/read of URI?tools=a,b returns one JSON object mapping each
//     selected name to its full definition ([Full]: name, description,
//     inputSchema, outputSchema, annotations, and the author's examples,
//     usage_guidance and error_guidance from [Details]); an unknown name
//     maps to {"error": "Tool 'x' not found", "available_tools": [...]}.
//     The read authorizes the known tools in the caller's scope, each at
//     the version read ([MetaToolVersions] in the content's _meta).
//   - tools/call of a tool not authorized in the caller's scope, or
//     authorized at a version that has since changed, is refused with
//     TOOL_DESCRIPTION_REQUIRED and the URI to read.
//   - initialize and server/discover carry [Instructions] (seed section 8)
//     after the server's own instructions.
//
// Tools are added to the server as usual (mcp.AddTool, resolve.AddTool,
// inject.AddTool); [AddTool], [Server.AddTool] and [Server.SetDetails]
// attach examples and guidance, and [Options.Source] takes them from
// elsewhere, such as a folder of one JSON file per tool ([OpenDir]),
// reloaded when a file changes.
//
// # Errors
//
// The seed's error codes are strings ([CodeMissingToolSelection],
// [CodeToolDescriptionRequired], plus [CodeInvalidToolSelection],
// [CodeRateLimited] and [CodeUnavailable]); each travels as an [Error]
// object in the seed's shape, by the channel its method has:
//
//   - a refused tools/call is a tool result with isError true,
//     structuredContent {"error": {code, message, resource_uri, tool}} and
//     the same JSON as its text content: MCP reports errors a model can act
//     on in the tool result, where the model sees them, and clients
//     (TypeScript SDK v2 included) skip output-schema validation for
//     isError results, so every client gets the object intact;
//   - a refused resources/read is a JSON-RPC error (-32602 for a missing
//     or malformed selection, [RPCRateLimited] for the rate limit, -32603
//     when the store fails) whose data is the [Error] object and whose
//     message repeats the seed's message and examples: a read has no
//     isError, and a successful read whose contents are an error document
//     would be indistinguishable from the resource's contents.
//
// [ErrorOf] and [ResultError] decode both for Go clients; [Fetch] reads
// descriptions.
//
// # Scopes: sessions, principals, neither
//
// Authorization state is kept per scope, in a [Store] ([NewMemoryStore] by
// default; package [github.com/preflightmcp/preflight/gateway/internal/redisstore]
// for replicas), for [Options.TTL] after the scope's last read.
// [DefaultKey] decides the scope: a legacy MCP session (its id; forgotten
// when the session ends), a connection without session id such as stdio
// (forgotten when it closes), or, for sessionless 2026-07-28 HTTP requests,
// the authenticated principal (the SDK's auth.TokenInfo.UserID). A
// sessionless request with no principal has no identity: by default
// ([AnonymousShared]) all such requests share one scope, so the workflow is
// enforced for the deployment as a whole but not per client; give an
// [Options.Key] or authenticate clients to isolate them, or choose
// [AnonymousOpen] to leave them unchecked.
//
// As the seed says, this is workflow enforcement, not a security
// boundary: it grants nothing, and every other authorization still
// applies. Reads are rate limited per scope ([Options.FetchRate]).
package disclose
