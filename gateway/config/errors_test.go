package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// schemaVerdict says what the JSON Schema makes of a bad canonical file.
type schemaVerdict int

const (
	schemaNA      schemaVerdict = iota // not a canonical file the schema reads
	schemaRejects                      // the schema finds a problem too
	schemaAccepts                      // only the gateway can tell (environment, relations)
)

// badFiles are the files of testdata/bad with their exact errors.
var badFiles = []struct {
	file   string
	want   string
	schema schemaVerdict
}{
	{"unknown_key.yaml", `3:5: servers.github.tpye: unknown key, did you mean type? (allowed: args, auth, bearerTokenEnv, command, connect, cwd, decisions, disclose, env, envFile, exclude, flow, headers, include, oauth, overrides, pack, pin, prefix, rules, separator, timeouts, trust, type, url)`, schemaRejects},
	{"top_unknown.yaml", `4:1: audits: unknown key, did you mean audit? (allowed: $schema, approvals, audit, auth, decisions, disclosure, flow, listen, metrics, pins, redaction, redis, requestState, retry, servers, tracing, vault)`, schemaRejects},
	{"tracing_bad.yaml", `6:16: tracing.sampleRatio: 1.5: want 0 to 1
7:13: tracing.endpoint: "localhost:4318": want an http or https URL`, schemaRejects},
	{"retry_bad.yaml", `5:13: retry.attempts: 0 attempts: want 1 (no retries) to 10
6:11: retry.budget: expected a whole number, found the string "ten"
8:15: retry.maxBackoff: 1s is less than retry.backoff (2s)
10:12: metrics.enabled: expected true or false, found the string "no"`, schemaRejects},
	{"bad_type.yaml", `3:11: servers.github.type: "htp" is not allowed (allowed: stdio, http, sse)`, schemaRejects},
	{"stdio_with_url.yaml", `5:10: servers.files.url: not allowed for a stdio server (it is for http and sse servers)`, schemaRejects},
	{"remote_stdio_fields.yaml", `4:10: servers.api.url: not an http:// or https:// URL with a host
5:14: servers.api.command: not allowed for an sse server (it is for stdio servers)
6:10: servers.api.cwd: not allowed for an sse server (it is for stdio servers)
10:8: redis.url: not a Redis URL (allowed: redis://[user:password@]host:port[/db], rediss://... for TLS, unix:///path)`, schemaRejects},
	{"no_command.yaml", `3:5: servers.files: needs command (a stdio server) or url (an http or sse server)`, schemaRejects},
	{"null_command.yaml", `3:13: servers.files.command: expected a string, found null`, schemaRejects},
	{"unset_var.yaml", `5:22: servers.gitlab.headers.Authorization: environment variable GITLAB_TOKEN is not set`, schemaAccepts},
	{"editor_vars.yaml", `4:12: servers.files.args[0]: environment variable workspaceFolder is not set (${workspaceFolder} is an editor's variable, read in mcpServers and VS Code files only)
4:34: servers.files.args[1]: ${command:pickFile} is an editor variable that cannot be resolved outside the editor (allowed: ${NAME}, ${env:NAME}, ${NAME:-default})
4:57: servers.files.args[2]: "1X" is not a variable name (letters, digits and _, not starting with a digit)
4:66: servers.files.args[3]: unterminated ${ (write $${ for a literal ${)`, schemaAccepts},
	{"bearer_unset.yaml", `4:21: servers.api.bearerTokenEnv: environment variable MISSING_TOKEN is not set`, schemaAccepts},
	{"bad_duration.yaml", `5:13: servers.files.timeouts.call: expected a duration such as 30s or 5m, found the number 30
6:16: servers.files.timeouts.connect: "0s" is not a positive duration (write a number with a unit: 500ms, 30s, 5m, 1h)
7:17: servers.files.timeouts.shutdown: "-5s" is not a positive duration (write a number with a unit: 500ms, 30s, 5m, 1h)`, schemaRejects},
	{"discover.yaml", `6:17: servers.files.timeouts.discover: 10s is longer than timeouts.connect (2s), which bounds it`, schemaAccepts},
	{"pin.yaml", `5:10: servers.github.pin: "audit" is not allowed (allowed: strict, warn, off)
8:10: servers.files.pin: expected one of strict, warn, off, found true`, schemaRejects},
	{"pack.yaml", `4:11: servers.github.pack: expected true, false or the name of a rules pack shipped with the gateway (such as github), found the number 3
7:11: servers.files.pack: "GitHub Server" is not a pack's name: want true, false or the name of a rules pack shipped with the gateway (such as github)
10:11: servers.memory.pack: expected true, false or the name of a rules pack shipped with the gateway (such as github), found a sequence`, schemaRejects},
	{"bad_bool.yaml", `4:15: servers.files.disclose: expected true or false, found the string "yes"`, schemaRejects},
	{"listen.yaml", `2:9: listen.http: "localhost" is not host:port (such as 127.0.0.1:8080)
3:10: listen.stdio: expected true or false, found the string "true"`, schemaRejects},
	{"duplicate_key.yaml", `6:3: servers.files: duplicate key (first at line 2)`, schemaNA},
	{"duplicate_key.json", `4:49: mcpServers.files.args: duplicate key (first at line 4)
5:5: mcpServers.files: duplicate key (first at line 4)`, schemaNA},
	{"prefix_clash.yaml", `7:13: servers.gitlab.prefix: "gh" is also the prefix of server "github"
11:5: servers.my_server: its prefix "my_server", made from its name, is also the prefix of server "my server": set prefix`, schemaAccepts},
	{"redis_missing.yaml", `6:10: disclosure.store: redis needs the Redis server in redis.url`, schemaRejects},
	{"pageurl_missing.yaml", `5:8: approvals.pageUrl: required with redis.url (replicas share Redis): the approval page's address as people reach it, such as the load balancer's https://mcp.example.com/ui, so that the links clients are given and the login links replicas print work on every replica`, schemaRejects},
	{"rules.yaml", `5:9: servers.github.rules[0].name: required: a rule's name identifies it in errors and logs
10:15: servers.github.rules[2].name: "create" is also the name of rules[1]
11:15: servers.github.rules[2].tool: "issue_[write" is not a glob pattern (* any characters, ? one, [a-z] one of a class)
13:9: servers.github.rules[3]: sets no annotation or hint
16:19: servers.github.overrides.issue_read: sets no annotation or hint
18:25: servers.github.overrides.delete_file.hints.effect: "remove" is not allowed (allowed: read, write, external, delete)`, schemaRejects},
	{"decisions.yaml", `2:48: servers.files.decisions: "sometimes" is not allowed (allowed: enforce, dry-run)
4:9: decisions.mode: "audit" is not allowed (allowed: enforce, dry-run)
6:13: decisions.rules[0].name: required: a rule's name identifies it in decisions, logs and the audit
10:17: decisions.rules[1].approval: only a rule whose decision is confirm says who approves; this one's is deny
11:13: decisions.rules[2].name: "keep" is also the name of decisions.rules[1]
13:24: decisions.rules[2].servers[1]: "github" is not a server of this configuration (servers: files)
14:15: decisions.rules[2].tools[0]: "[a-" is not a glob pattern (* any characters, ? one, [a-z] one of a class)
16:17: decisions.rules[3].decision: "maybe" is not allowed (allowed: allow, confirm, deny)
17:17: decisions.rules[3].approval: "someone" is not allowed (allowed: inband, human)
18:7: decisions.rules[4].decision: required: allow, confirm or deny
19:15: decisions.rules[4].reason: a reason has up to 512 characters, none of them control characters`, schemaRejects},
	{"listen_public.yaml", `2:9: listen.http: "0.0.0.0:8080" is not a loopback address, and auth is not set: without authentication the gateway serves only 127.0.0.1, [::1] or localhost; add auth.tokens or auth.oauth`, schemaAccepts},
	{"auth_empty.yaml", `4:7: auth: sets neither tokens nor oauth: leave auth out to serve without authentication (on a loopback address only)`, schemaRejects},
	{"auth_tokens.yaml", `7:15: auth.tokens[0].sha256: not a hash: write sha256: and the token's SHA-256 in hex, as preflight token prints it (the token itself never goes in the config)
8:7: auth.tokens[1].principal: required: the name decisions, approvals and the audit give whoever presents the token
8:15: auth.tokens[1].sha256: sha256: must be followed by 64 hexadecimal digits
12:15: auth.tokens[3].sha256: the same token as auth.tokens[2]`, schemaRejects},
	{"auth_oauth.yaml", `6:5: auth.oauth.resource: required: the canonical URL of this gateway's MCP endpoint as clients reach it, such as https://mcp.example.com/mcp
6:13: auth.oauth.issuer: not an https:// URL (http:// is allowed only for a loopback host such as 127.0.0.1)
7:14: auth.oauth.jwksUrl: a URL here holds no user or password
8:45: auth.oauth.audience[1]: also audience[0]
9:25: auth.oauth.algorithms[1]: "HS256" is not allowed (allowed: RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)
10:27: auth.oauth.scopes[1]: "two words" is not a scope (printable ASCII without spaces, " or \)
11:16: auth.oauth.clockSkew: 10m is more than 5m: a small tolerance for clocks that drift, not a grace period
13:22: auth.oauth.jwksMinInterval: 1m is longer than jwksRefresh (10s), which bounds it`, schemaRejects},
	{"audit.yaml", `6:9: audit.path: is for store sqlite; a PostgreSQL audit log is named by audit.url
7:8: audit.url: not a PostgreSQL URL (allowed: postgres://[user[:password]@]host[:port]/database[?sslmode=...], or postgresql://...)
9:11: audit.levels.read: "verbose" is not allowed (allowed: off, summary, full)
10:32: audit.sensitiveArguments[1]: "apiKey" is also sensitiveArguments[0]
11:18: audit.onUnavailable: "retry" is not allowed (allowed: proceed, fail-closed)`, schemaRejects},
	{"signin.yaml", `4:11: servers.files.auth: oauth is for http and sse servers
8:7: servers.api.oauth: set auth: oauth to sign in with OAuth, or leave oauth out
12:21: servers.docs.bearerTokenEnv: auth: oauth signs in instead: keep one
14:24: servers.docs.oauth.clientSecretEnv: a secret needs its oauth.clientId
15:15: servers.docs.oauth.issuer: not an http:// or https:// URL with a host
16:24: servers.docs.oauth.scopes[1]: "two words" is not a scope (printable ASCII without spaces, quotes or backslashes)
17:26: servers.docs.oauth.clientMetadataUrl: not an https:// URL with a path (a client ID metadata document)
19:3: vault.url: required for the postgres store: a PostgreSQL URL such as postgres://user@host:5432/database
20:9: vault.path: is for the sqlite store; the postgres store is the database in vault.url`, schemaRejects},
	{"audit_postgres.yaml", `5:3: audit.url: required with store postgres: the database, as postgres://USER@HOST/DATABASE (usually ${PREFLIGHT_POSTGRES_URL})`, schemaRejects},
	{"redaction.yaml", `5:10: redaction.level: "secret" is not allowed (allowed: public, internal, confidential, restricted, off)
7:18: redaction.kinds[1]: "email" is also kinds[0]
7:25: redaction.kinds[2]: "passport" is not allowed (allowed: secrets, email, phone, payment-card, iban, us-ssn, ipv4)
8:16: redaction.phoneRegion: "usa" is not a region: two capital letters, an ISO 3166 alpha-2 code such as US or DE (ZZ: international numbers only)`, schemaRejects},
	{"headers.yaml", `6:22: servers.api.headers.Authorization: set by bearerTokenEnv too: keep one
7:23: servers.api.headers.Mcp-Session-Id: set by the gateway on each request; it cannot be configured
8:21: servers.api.headers.Content-Type: set by the gateway on each request; it cannot be configured
9:21: servers.api.headers."bad header": not a header name`, schemaRejects},
	{"many.yaml", func() string {
		var b strings.Builder
		for i := range 20 {
			b.WriteString(strconv.Itoa(3+2*i) + `:11: servers.s` + strconv.Itoa(i) + `.type: "bad" is not allowed (allowed: stdio, http, sse)` + "\n")
		}
		return b.String() + "stopped after 20 problems; there may be more"
	}(), schemaRejects},
	{"empty.yaml", `the file is empty (expected a mapping with servers)`, schemaNA},
	{"top_list.yaml", `1:1: expected a mapping with servers, found a sequence`, schemaRejects},
	{"multi_doc.yaml", `4:1: YAML: a second document: a config file holds one`, schemaNA},
	{"yaml_syntax.yaml", `4:4: YAML: did not find expected key (while parsing a block mapping)`, schemaNA},
	{"tag.yaml", `3:14: YAML: unsupported tag "!secret"`, schemaNA},
	{"aliases.yaml", `1:32: YAML: more than 20000 values (with aliases expanded)`, schemaNA},
	{"json_syntax.json", `5:7: JSON: invalid character '"' after object key:value pair`, schemaNA},
	{"deep.json", `1:80: JSON: nested more than 64 levels deep`, schemaNA},
	{"no_servers.json", `1:16: mcpServers: no servers: at least one is required`, schemaNA},
	{"mcpservers_type.json", `3:24: mcpServers.remote.type: "websocket" is not allowed (allowed: stdio, http, sse, streamable-http, streamableHttp)
4:33: mcpServers.local.trust: unknown key (allowed in an mcpServers entry: args, command, cwd, env, envFile, headers, type, url)`, schemaNA},
	{"vscode_input.json", `9:26: servers.search.env.API_KEY: ${input:search-key} has no default, and preflight cannot prompt for it: set SEARCH_KEY or "search-key" in the environment
9:58: servers.search.env.OTHER: ${input:other} is not defined in inputs, and preflight cannot prompt for it: set OTHER or "other" in the environment`, schemaNA},
	{"pins_sqlite.yaml", `5:10: pins.store: "mysql" is not allowed (allowed: sqlite, postgres)
6:9: pins.path: empty: name the SQLite file, or leave pins.path out for the default (pins.db in the user's state directory)
7:8: pins.url: is for the postgres store; the sqlite store keeps its pins in pins.path`, schemaRejects},
	{"pins_postgres.yaml", `6:9: pins.path: is for the sqlite store; the postgres store is the database in pins.url
7:8: pins.url: not a PostgreSQL URL (allowed: postgres://user[:password]@host[:port]/database[?sslmode=...])`, schemaRejects},
	{"pins_no_url.yaml", `5:3: pins.url: required: the PostgreSQL database, as postgres://user@host:5432/database`, schemaRejects},
	{"vscode_sandbox.json", `6:7: servers.files.sandboxEnabled: unknown key (allowed in a VS Code server: args, command, cwd, dev, env, envFile, headers, type, url)`, schemaNA},
}

// TestBadFiles checks the exact errors of every file in testdata/bad:
// each line names the file, the line and column, the key and what is
// allowed.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tc := range badFiles {
		listed = append(listed, filepath.Join("testdata", "bad", tc.file))
	}
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Errorf("testdata/bad holds %v, the table %v: every bad file needs its errors written down", files, listed)
	}
	for _, tc := range badFiles {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			name := filepath.Join("testdata", "bad", tc.file)
			c, err := Parse(name, read(t, filepath.Join("bad", tc.file)), testEnv)
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", c)
			}
			// The table leaves out the file's name that starts each line.
			var want []string
			for line := range strings.Lines(tc.want) {
				line = strings.TrimSuffix(line, "\n")
				if line[0] >= '0' && line[0] <= '9' {
					want = append(want, name+":"+line)
				} else {
					want = append(want, name+": "+line)
				}
			}
			wantText := strings.Join(want, "\n")
			if got := err.Error(); got != wantText {
				t.Errorf("errors:\n%s\nwant:\n%s", got, wantText)
			}
			var one *Error
			if !errors.As(err, &one) || one.File != name {
				t.Errorf("errors.As(*Error) = %v, %+v", errors.As(err, &one), one)
			}
		})
	}
}

// TestErrorMessagesAreBounded checks that an error repeats at most a short,
// escaped part of a long or hostile key or value.
func TestErrorMessagesAreBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 5000) + `\u001b[31m`
	text := `{"servers": {"files": {"command": "npx", "` + long + `": 1, "type": "` + long + `"}}, "listen": {}}`
	_, err := Parse("c.json", []byte(text), testEnv)
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if len(msg) > 1000 || strings.Contains(msg, "\x1b") {
		t.Errorf("message of %d bytes, escape kept: %q", len(msg), msg)
	}
	if !strings.Contains(msg, `"kkkk`) || !strings.Contains(msg, `…"`) {
		t.Errorf("message does not show the start of the key: %q", msg)
	}
}

// TestSecretsNotRepeated checks that errors about URLs and headers do not
// repeat their values, which may hold tokens.
func TestSecretsNotRepeated(t *testing.T) {
	t.Parallel()
	text := `servers:
  api:
    url: "ftp://user:hunter2@example.com/?token=hunter2"
    headers: {X-Token: "hunter2\x01"}
redis:
  url: "http://:hunter2@localhost"
`
	_, err := Parse("c.yaml", []byte(text), testEnv)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v", err)
	}
	if n := len(err.(Errors)); n != 3 {
		t.Errorf("%d problems, want 3: %v", n, err)
	}
}

func TestReadFileLimit(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readFile(path, 10); err != nil {
		t.Errorf("10 bytes with a limit of 10: %v", err)
	}
	if _, err := readFile(path, 9); err == nil || !strings.Contains(err.Error(), "larger than 9 bytes") {
		t.Errorf("10 bytes with a limit of 9: %v", err)
	}
	if _, err := Parse("big.yaml", make([]byte, MaxFileSize+1), nil); err == nil || !strings.Contains(err.Error(), "big.yaml: larger than") {
		t.Errorf("Parse of a file too large: %v", err)
	}
}
