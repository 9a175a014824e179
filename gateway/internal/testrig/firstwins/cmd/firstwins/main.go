// Command firstwins is an MCP server, on the standard library only, that
// reads every message with [firstwins.FirstWinsNumber]: a repeated object
// member keeps its first value, at every depth. It serves one tool, files,
// which reads or deletes a file under -dir, and appends each call it
// executes to -journal before acting.
//
// Usage:
//
//	firstwins -dir DIR [-journal FILE] [-http ADDR] [-era 2025-11-25|2026-07-28|both]
//
// Without -http it speaks newline-delimited JSON-RPC on stdin and stdout and
// exits at the end of stdin. With -http it serves streamable HTTP at
// http://ADDR/mcp, prints that URL as the first line of stdout, and runs
// until SIGINT or SIGTERM. Era 2025-11-25 is the initialize handshake
// (stateful over HTTP: Mcp-Session-Id); era 2026-07-28 is server/discover
// and per-request _meta (stateless over HTTP).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/testrig/firstwins"
)

const (
	version20251125 = "2025-11-25"
	version20260728 = "2026-07-28"

	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"

	headerProtocolVersion = "Mcp-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"

	maxMessage = 16 << 20
)

// JSON-RPC and MCP error codes.
const (
	codeParse                      = -32700
	codeInvalidRequest             = -32600
	codeMethodNotFound             = -32601
	codeInvalidParams              = -32602
	codeInternal                   = -32603
	codeHeaderMismatch             = -32020
	codeUnsupportedProtocolVersion = -32022
)

var serverInfo = map[string]any{"name": "firstwins", "version": "0.1.0"}

var filesTool = map[string]any{
	"name":        "files",
	"description": "Reads or deletes a file under the server's folder.",
	"inputSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{"type": "string", "enum": []any{"read", "delete"}},
			"path":   map[string]any{"type": "string"},
		},
		"required": []any{"action", "path"},
	},
	"annotations": map[string]any{"readOnlyHint": false, "destructiveHint": true},
}

func main() {
	dir := flag.String("dir", "", "the folder the files tool works on (required)")
	journal := flag.String("journal", "", "append one JSON line per executed tool call to this file")
	httpAddr := flag.String("http", "", "serve streamable HTTP at this address, path /mcp, instead of stdio")
	era := flag.String("era", "both", "protocol era: 2025-11-25, 2026-07-28 or both")
	flag.Parse()
	if *dir == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	s := &server{}
	switch *era {
	case version20251125:
		s.legacy = true
	case version20260728:
		s.modern = true
	case "both":
		s.legacy, s.modern = true, true
	default:
		fmt.Fprintf(os.Stderr, "firstwins: -era %q: want 2025-11-25, 2026-07-28 or both\n", *era)
		os.Exit(2)
	}
	var err error
	if s.root, err = os.OpenRoot(*dir); err != nil {
		fmt.Fprintf(os.Stderr, "firstwins: %v\n", err)
		os.Exit(1)
	}
	if *journal != "" {
		if s.journal, err = os.OpenFile(*journal, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "firstwins: %v\n", err)
			os.Exit(1)
		}
	}
	if *httpAddr != "" {
		err = s.serveHTTP(*httpAddr)
	} else {
		err = s.serveStdio(os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "firstwins: %v\n", err)
		os.Exit(1)
	}
}

type server struct {
	legacy bool // speaks 2025-11-25
	modern bool // speaks 2026-07-28
	root   *os.Root

	jmu     sync.Mutex
	journal *os.File

	smu      sync.Mutex
	sessions map[string]*session // HTTP, 2025-11-25
}

// session is the state of a 2025-11-25 connection.
type session struct {
	mu          sync.Mutex
	initialized bool
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type response struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      any       `json:"id"`
	Result  any       `json:"result,omitempty"`
	Error   *rpcError `json:"error,omitempty"`
}

func errorResponse(id any, code int, format string, args ...any) *response {
	return &response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// encode marshals r; it cannot fail for the values this server builds, but
// falls back to an internal error rather than write nothing.
func encode(r *response) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(errorResponse(nil, codeInternal, "encoding response: %v", err))
	}
	return b
}

// versions are the protocol versions this server speaks, newest first.
func (s *server) versions() []string {
	var v []string
	if s.modern {
		v = append(v, version20260728)
	}
	if s.legacy {
		v = append(v, version20251125)
	}
	return v
}

// parse reads one message. A nil response means msg is usable; otherwise
// the response is the error to send.
func parse(data []byte) (map[string]any, *response) {
	v, err := firstwins.FirstWinsNumber(data)
	if err != nil {
		return nil, errorResponse(nil, codeParse, "parse error: %v", err)
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case []any:
		return nil, errorResponse(nil, codeInvalidRequest, "batches are not supported")
	default:
		return nil, errorResponse(nil, codeInvalidRequest, "a message must be a JSON object")
	}
}

// metaVersion returns params._meta's protocol version when it selects the
// 2026-07-28 protocol (a string not older than it), and "" otherwise.
func metaVersion(msg map[string]any) string {
	params, _ := msg["params"].(map[string]any)
	meta, _ := params["_meta"].(map[string]any)
	v, _ := meta[metaProtocolVersion].(string)
	if v < version20260728 {
		return ""
	}
	return v
}

// isModern reports whether msg is a request of the 2026-07-28 protocol.
func (s *server) isModern(msg map[string]any) bool {
	_, isCall := msg["id"]
	return s.modern && isCall && metaVersion(msg) != ""
}

// handle answers one message; it returns nil for notifications and
// responses. sess is the 2025-11-25 state (nil if there is none).
func (s *server) handle(sess *session, msg map[string]any) (resp *response) {
	id, isCall := msg["id"]
	defer func() {
		if r := recover(); r != nil {
			resp = nil
			if isCall {
				switch id.(type) {
				case string, json.Number:
				default:
					id = nil
				}
				resp = errorResponse(id, codeInternal, "internal error: %v", r)
			}
		}
	}()
	m, hasMethod := msg["method"]
	if !isCall {
		if method, _ := m.(string); method == "notifications/initialized" && sess != nil {
			sess.mu.Lock()
			sess.initialized = true
			sess.mu.Unlock()
		}
		return nil // notifications and client responses need no answer
	}
	switch id.(type) {
	case string, json.Number:
	default:
		return errorResponse(nil, codeInvalidRequest, "id must be a string or a number")
	}
	if !hasMethod {
		if _, ok := msg["result"]; ok {
			return nil
		}
		if _, ok := msg["error"]; ok {
			return nil
		}
	}
	method, ok := m.(string)
	if !ok || msg["jsonrpc"] != "2.0" {
		return errorResponse(id, codeInvalidRequest, `invalid request: want "jsonrpc":"2.0" and a string method`)
	}
	params, ok := msg["params"].(map[string]any)
	if !ok {
		if p, present := msg["params"]; present && p != nil {
			return errorResponse(id, codeInvalidParams, "params must be an object")
		}
		params = map[string]any{}
	}
	if !s.modern && method == "server/discover" {
		return errorResponse(id, codeMethodNotFound, "method not found: %q", method)
	}
	if s.isModern(msg) {
		return s.handleModern(id, method, params)
	}
	return s.handleLegacy(sess, id, method, params)
}

// handleModern answers a request of the 2026-07-28 protocol.
func (s *server) handleModern(id any, method string, params map[string]any) *response {
	meta := params["_meta"].(map[string]any)
	requested := meta[metaProtocolVersion].(string)
	if requested != version20260728 {
		r := errorResponse(id, codeUnsupportedProtocolVersion, "unsupported protocol version")
		r.Error.Data = map[string]any{"supported": s.versions(), "requested": requested}
		return r
	}
	if _, ok := meta[metaClientCapabilities].(map[string]any); !ok {
		return errorResponse(id, codeInvalidParams, "missing or invalid _meta field %q", metaClientCapabilities)
	}
	if ci, present := meta[metaClientInfo]; present {
		if _, ok := ci.(map[string]any); !ok {
			return errorResponse(id, codeInvalidParams, "invalid _meta field %q", metaClientInfo)
		}
	}
	var result map[string]any
	switch method {
	case "server/discover":
		result = map[string]any{
			"supportedVersions": s.versions(),
			"capabilities":      map[string]any{"tools": map[string]any{}},
			"ttlMs":             0,
			"cacheScope":        "public",
		}
	case "tools/list":
		result = map[string]any{"tools": []any{filesTool}, "ttlMs": 0, "cacheScope": "public"}
	case "tools/call":
		var rerr *response
		if result, rerr = s.callTool(id, params); rerr != nil {
			return rerr
		}
	default:
		return errorResponse(id, codeMethodNotFound, "method not found: %q", method)
	}
	result["resultType"] = "complete"
	result["_meta"] = map[string]any{metaServerInfo: serverInfo}
	return &response{JSONRPC: "2.0", ID: id, Result: result}
}

// handleLegacy answers a request of the 2025-11-25 protocol.
func (s *server) handleLegacy(sess *session, id any, method string, params map[string]any) *response {
	if !s.legacy {
		requested, _ := params["protocolVersion"].(string)
		r := errorResponse(id, codeUnsupportedProtocolVersion, "unsupported protocol version: this server speaks only %s, with _meta.%s", version20260728, metaProtocolVersion)
		r.Error.Data = map[string]any{"supported": s.versions(), "requested": requested}
		return r
	}
	if sess == nil {
		return errorResponse(id, codeInvalidRequest, "no session: send initialize first")
	}
	switch method {
	case "initialize":
		sess.mu.Lock()
		defer sess.mu.Unlock()
		if sess.initialized {
			return errorResponse(id, codeInvalidRequest, "duplicate initialize")
		}
		sess.initialized = true
		return &response{JSONRPC: "2.0", ID: id, Result: map[string]any{
			"protocolVersion": version20251125,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      serverInfo,
		}}
	case "ping":
		return &response{JSONRPC: "2.0", ID: id, Result: map[string]any{}}
	case "tools/list", "tools/call":
		sess.mu.Lock()
		ok := sess.initialized
		sess.mu.Unlock()
		if !ok {
			return errorResponse(id, codeInvalidRequest, "method %q before initialize", method)
		}
		if method == "tools/list" {
			return &response{JSONRPC: "2.0", ID: id, Result: map[string]any{"tools": []any{filesTool}}}
		}
		result, rerr := s.callTool(id, params)
		if rerr != nil {
			return rerr
		}
		return &response{JSONRPC: "2.0", ID: id, Result: result}
	case "server/discover":
		return errorResponse(id, codeMethodNotFound, "%q is only supported in protocol version >= %s", method, version20260728)
	default:
		return errorResponse(id, codeMethodNotFound, "method not found: %q", method)
	}
}

// callTool runs tools/call. Failures of the tool are results with isError;
// a malformed call or an unknown tool is a JSON-RPC error.
func (s *server) callTool(id any, params map[string]any) (map[string]any, *response) {
	name, ok := params["name"].(string)
	if !ok {
		return nil, errorResponse(id, codeInvalidParams, "tools/call: name must be a string")
	}
	if name != "files" {
		return nil, errorResponse(id, codeInvalidParams, "unknown tool %q", name)
	}
	args, ok := params["arguments"].(map[string]any)
	if !ok {
		if a, present := params["arguments"]; present && a != nil {
			return nil, errorResponse(id, codeInvalidParams, "tools/call: arguments must be an object")
		}
		args = map[string]any{}
	}
	text, err := s.files(name, args)
	result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if err != nil {
		result["content"] = []any{map[string]any{"type": "text", "text": err.Error()}}
		result["isError"] = true
	}
	return result, nil
}

// files runs the files tool. A call whose action and path are valid is
// journaled, then executed; os.Root refuses symlinks that leave the folder.
func (s *server) files(tool string, args map[string]any) (string, error) {
	action, _ := args["action"].(string)
	if action != "read" && action != "delete" {
		return "", errors.New(`action must be "read" or "delete"`)
	}
	path, ok := args["path"].(string)
	if !ok {
		return "", errors.New("path must be a string")
	}
	if err := checkPath(path); err != nil {
		return "", err
	}
	if err := s.record(firstwins.Entry{Tool: tool, Action: action, Path: path, Args: args}); err != nil {
		return "", fmt.Errorf("journal: %v", err)
	}
	switch action {
	case "read":
		b, err := s.root.ReadFile(path)
		if err != nil {
			return "", err
		}
		return string(b), nil
	default:
		fi, err := s.root.Lstat(path)
		if err != nil {
			return "", err
		}
		if fi.IsDir() {
			return "", &fs.PathError{Op: "delete", Path: path, Err: errors.New("is a directory")}
		}
		if err := s.root.Remove(path); err != nil {
			return "", err
		}
		return "deleted " + path, nil
	}
}

// checkPath refuses paths that are empty, absolute or that name "..".
func checkPath(path string) error {
	if path == "" || strings.ContainsRune(path, 0) {
		return fmt.Errorf("invalid path %q", path)
	}
	if filepath.IsAbs(path) || strings.HasPrefix(path, "/") || strings.HasPrefix(path, `\`) {
		return fmt.Errorf("path %q is absolute; paths are relative to the folder", path)
	}
	for _, elem := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if elem == ".." {
			return fmt.Errorf("path %q leaves the folder", path)
		}
	}
	if !filepath.IsLocal(path) {
		return fmt.Errorf("path %q leaves the folder", path)
	}
	return nil
}

// record appends e to the journal.
func (s *server) record(e firstwins.Entry) error {
	if s.journal == nil {
		return nil
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s.jmu.Lock()
	defer s.jmu.Unlock()
	_, err = s.journal.Write(append(line, '\n'))
	return err
}

// serveStdio answers newline-delimited messages from in until it ends.
func (s *server) serveStdio(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	sess := &session{}
	for {
		line, tooLong, err := readLine(r)
		if err != nil && err != io.EOF {
			return err
		}
		var resp *response
		if tooLong {
			resp = errorResponse(nil, codeParse, "parse error: message longer than %d bytes", maxMessage)
		} else if len(bytes.TrimSpace(line)) > 0 {
			msg, perr := parse(line)
			if resp = perr; resp == nil {
				resp = s.handle(sess, msg)
			}
		}
		if resp != nil {
			if _, werr := out.Write(append(encode(resp), '\n')); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// readLine reads one line (without its end). A line over maxMessage bytes
// is skipped and reported as tooLong.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxMessage+2 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		line = bytes.TrimRight(line, "\r\n")
		return line, tooLong, err
	}
}

// serveHTTP serves streamable HTTP at addr until SIGINT or SIGTERM.
func (s *server) serveHTTP(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip.To4() == nil {
			host = "::1"
		}
	}
	s.sessions = map[string]*session{}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.serveMCP)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("http://%s/mcp\n", net.JoinHostPort(host, port))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// serveMCP is the streamable HTTP endpoint.
func (s *server) serveMCP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if rec := recover(); rec != nil {
			http.Error(w, fmt.Sprintf("internal error: %v", rec), http.StatusInternalServerError)
		}
	}()
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodDelete:
		if !s.legacy {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		id := r.Header.Get(headerSessionID)
		if id == "" {
			http.Error(w, "Bad Request: DELETE requires an Mcp-Session-Id header", http.StatusBadRequest)
			return
		}
		s.smu.Lock()
		_, ok := s.sessions[id]
		delete(s.sessions, id)
		s.smu.Unlock()
		if !ok {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		if s.legacy {
			w.Header().Set("Allow", "POST, DELETE")
		} else {
			w.Header().Set("Allow", "POST")
		}
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

func writeJSON(w http.ResponseWriter, status int, resp *response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(encode(resp))
}

// modernStatus is the HTTP status of a 2026-07-28 answer (SEP-2575).
func modernStatus(resp *response) int {
	if resp.Error == nil {
		return http.StatusOK
	}
	switch resp.Error.Code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeUnsupportedProtocolVersion, codeHeaderMismatch:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

func (s *server) servePOST(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); !strings.EqualFold(strings.TrimSpace(strings.Split(ct, ";")[0]), "application/json") {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessage))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return
	}
	msg, perr := parse(body)
	if perr != nil {
		writeJSON(w, http.StatusBadRequest, perr)
		return
	}
	id, isCall := msg["id"]
	method, _ := msg["method"].(string)
	header := r.Header.Get(headerProtocolVersion)

	var sess *session
	sid := r.Header.Get(headerSessionID)
	if sid != "" && s.legacy {
		s.smu.Lock()
		sess = s.sessions[sid]
		s.smu.Unlock()
		if sess == nil {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
	}

	if !s.modern && isCall && method == "server/discover" {
		writeJSON(w, http.StatusOK, s.handle(sess, msg))
		return
	}
	modern := s.modern && isCall && (header >= version20260728 || metaVersion(msg) != "")
	if modern {
		if resp := checkHeaders(r.Header, id, method, msg); resp != nil {
			writeJSON(w, http.StatusBadRequest, resp)
			return
		}
		resp := s.handle(sess, msg)
		if sess != nil {
			w.Header().Set(headerSessionID, sid)
		}
		writeJSON(w, modernStatus(resp), resp)
		return
	}

	newSession := false
	if s.legacy && isCall {
		if header != "" && header != version20251125 && method != "initialize" {
			http.Error(w, fmt.Sprintf("Bad Request: Unsupported protocol version (supported versions: %s)", strings.Join(s.versions(), ",")), http.StatusBadRequest)
			return
		}
		if sess == nil {
			if method != "initialize" {
				http.Error(w, "Bad Request: missing Mcp-Session-Id header (send initialize first)", http.StatusBadRequest)
				return
			}
			sess, newSession = &session{}, true
		}
	}
	resp := s.handle(sess, msg)
	if resp == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	status := http.StatusOK
	if !s.legacy {
		status = modernStatus(resp)
	}
	if newSession && resp.Error == nil {
		sid = newSessionID()
		s.smu.Lock()
		s.sessions[sid] = sess
		s.smu.Unlock()
	}
	if sess != nil && sid != "" {
		w.Header().Set(headerSessionID, sid)
	}
	writeJSON(w, status, resp)
}

// checkHeaders checks the headers SEP-2575 requires of a 2026-07-28
// request against the body, as this server read it.
func checkHeaders(h http.Header, id any, method string, msg map[string]any) *response {
	header, meta := h.Get(headerProtocolVersion), metaVersion(msg)
	switch {
	case header == "":
		return errorResponse(id, codeHeaderMismatch, "%s header is required for requests carrying %q", headerProtocolVersion, metaProtocolVersion)
	case meta == "":
		return errorResponse(id, codeInvalidParams, "missing or invalid _meta field %q", metaProtocolVersion)
	case header != meta:
		return errorResponse(id, codeHeaderMismatch, "%s header %q does not match request %s %q", headerProtocolVersion, header, metaProtocolVersion, meta)
	}
	if got := h.Get(headerMethod); got != method {
		return errorResponse(id, codeHeaderMismatch, "%s header %q does not match body method %q", headerMethod, got, method)
	}
	if method == "tools/call" {
		params, _ := msg["params"].(map[string]any)
		name, _ := params["name"].(string)
		if got := h.Get(headerName); got == "" || got != name {
			return errorResponse(id, codeHeaderMismatch, "%s header %q does not match body name %q", headerName, got, name)
		}
	}
	return nil
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
