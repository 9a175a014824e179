package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"go.yaml.in/yaml/v4"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/jsonc"
)

// connect moves the MCP servers of a client's configuration file into a
// preflight configuration and points the client at preflight instead.

// backupSuffix names the copy of a client's file connect keeps next to it.
const backupSuffix = ".preflight-backup"

// preflightName is the name of the one server a connected client starts.
const preflightName = "preflight"

type connectCmd struct {
	file    string
	home    string
	config  string
	command string
	undo    bool
	dryRun  bool
	force   bool

	// For tests: the system whose default locations apply (runtime.GOOS),
	// the environment (os.Getenv) and the running binary (os.Executable).
	goos       string
	getenv     func(string) string
	executable func() (string, error)

	common
}

func (c *connectCmd) synopsis() string {
	return `usage: preflight connect [-file FILE] [-config FILE] [-command PATH] [-home DIR] [-dry-run] [-force] CLIENT
       preflight connect -undo [-file FILE] [-home DIR] [-dry-run] [-force] CLIENT

Puts the preflight gateway between an MCP client and the servers it starts.
connect reads the client's configuration file, moves its MCP servers into a
preflight configuration of their own (-config; default CLIENT.yaml in the
preflight directory of the user's configuration directory:
$XDG_CONFIG_HOME/preflight, else ~/.config/preflight; ~/Library/Application
Support/preflight on macOS, %APPDATA%\preflight on Windows) and rewrites the
client's file so that the one server it starts is preflight: this binary
(-command), with serve -stdio -config FILE. Everything else in the client's
file is left as it is, byte for byte; the file as it was is kept next to it
as FILE.preflight-backup. Restart the client afterwards.

CLIENT and the file read (-file reads another, such as a project's):

  claude-desktop  mcpServers of claude_desktop_config.json in
                  ~/Library/Application Support/Claude (macOS),
                  %APPDATA%\Claude (Windows), ~/.config/Claude (Linux)
  claude-code     mcpServers of ~/.claude.json (user scope); a project's
                  .mcp.json with -file
  cursor          mcpServers of ~/.cursor/mcp.json
  vscode          servers of the user's mcp.json in ~/Library/Application
                  Support/Code/User (macOS), %APPDATA%\Code\User (Windows),
                  ~/.config/Code/User (Linux); .vscode/mcp.json with -file
  codex           the [mcp_servers.NAME] tables of ~/.codex/config.toml
                  ($CODEX_HOME/config.toml)
  gemini-cli      mcpServers of ~/.gemini/settings.json
  windsurf        mcpServers of ~/.codeium/windsurf/mcp_config.json

Each server keeps its command, args, env, cwd, envFile, url, headers and
type, and the tool filters and timeouts the client has (Gemini CLI's
includeTools, excludeTools and timeout; Windsurf's disabledTools; Codex's
enabled_tools, disabled_tools, startup_timeout_sec, tool_timeout_sec,
bearer_token_env_var and env_http_headers). Settings preflight has no
equivalent for are listed as notes. Servers the client has turned off
(disabled: true, enabled = false), VS Code servers in its sandbox, and
entries of a kind preflight does not serve stay in the client's file.

References stay references. ${NAME}, ${env:NAME} and ${NAME:-default} are
carried as they are, and read from preflight's environment; Gemini CLI's
$NAME becomes ${NAME}. VS Code's ${input:ID} and the workspace variables of
VS Code and Cursor (${workspaceFolder}, ${workspaceFolderBasename},
${userHome}) are handed over in the env of preflight's clientEntry
(PREFLIGHT_INPUT_ID, PREFLIGHT_WORKSPACE_FOLDER, ...), so that the client
still asks for its inputs and names its workspace; VS Code's inputs stay in
its file. Codex does not read ${...}: its values are carried literally.

A client whose servers already include preflight is left as it is. -undo
restores the client's file from the backup, byte for byte, and removes the
preflight configuration if it is still as connect wrote it; if the client
changed its file since, outside its servers, -undo puts the servers back
and keeps those changes. -dry-run prints what would change, as unified
diffs, and writes nothing. -force replaces an existing backup or preflight
configuration, and makes -undo restore the backup whatever changed since.

-home DIR looks for the default files under DIR instead of the user's home,
ignoring $XDG_CONFIG_HOME, %APPDATA% and $CODEX_HOME.

Exit status: 0 done (with -dry-run: shown); 1 nothing was changed: the
client is already connected (or not, for -undo), a backup or another
preflight configuration is in the way, the file has no server to move or
one that preflight cannot serve, or it changed since connect (-undo); 2
usage error; 3 a file could not be read, parsed or written.

Examples:

  preflight connect claude-desktop
  preflight connect -dry-run cursor
  preflight connect -file .vscode/mcp.json -config .vscode/preflight.yaml vscode
  preflight connect -undo claude-desktop
`
}

func (c *connectCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json")
	c.bindTimeout(fs)
	fs.StringVar(&c.file, "file", "", "the client's configuration `FILE` (default: where the client keeps it, under the home directory)")
	fs.StringVar(&c.home, "home", "", "look for the default files under `DIR` instead of $HOME (and ignore $XDG_CONFIG_HOME, %APPDATA% and $CODEX_HOME)")
	fs.StringVar(&c.config, "config", "", "the preflight configuration `FILE` to write (default: CLIENT.yaml in preflight's directory of the user's configuration directory)")
	fs.StringVar(&c.command, "command", "", "the preflight `PATH` the client starts (default: this binary's absolute path)")
	fs.BoolVar(&c.undo, "undo", false, "restore the client's file from its backup and remove the preflight configuration connect wrote")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print what would change, as unified diffs, and write nothing")
	fs.BoolVar(&c.force, "force", false, "replace an existing backup or preflight configuration; with -undo, restore the backup even if the file changed since")
}

// connectReport is what connect did, or would do with -dry-run.
type connectReport struct {
	Client  string       `json:"client"`
	File    string       `json:"file"`
	Backup  string       `json:"backup"`
	Config  string       `json:"config"`
	Command string       `json:"command,omitempty"`
	Undo    bool         `json:"undo,omitempty"`
	DryRun  bool         `json:"dryRun,omitempty"`
	Moved   []string     `json:"moved"`
	Kept    []keptServer `json:"kept"`
	Notes   []string     `json:"notes"`
	// Done says what was done, one sentence each.
	Done []string `json:"done"`
	// Diff is the unified diff of the changes (with -dry-run).
	Diff string `json:"diff,omitempty"`
}

// keptServer is a server that stays in the client's file.
type keptServer struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func (c *connectCmd) run(_ context.Context, env *env, inv invocation) error {
	if inv.dashDash {
		return usagef("connect takes no command after --")
	}
	if len(inv.args) != 1 {
		return usagef("name one client: %s", wordList(clientNames(), "or"))
	}
	cl := lookupClient(inv.args[0])
	if cl == nil {
		return usagef("unknown client %q: want %s", inv.args[0], wordList(clientNames(), "or"))
	}
	if c.undo && c.command != "" {
		return usagef("-command is for connect: -undo reads it from the client's file")
	}
	d, err := c.homeDirs()
	if err != nil {
		return err
	}
	file := c.file
	if file == "" {
		file = cl.path(d)
	}
	if file, err = filepath.Abs(file); err != nil {
		return couldNotRun(err)
	}
	var rep *connectReport
	if c.undo {
		rep, err = c.runUndo(cl, file, d)
	} else {
		rep, err = c.runConnect(cl, file, d)
	}
	if err != nil {
		return err
	}
	if c.format == "json" {
		return writeJSON(env.stdout, rep)
	}
	printConnectReport(env.stdout, cl, rep)
	return nil
}

// runConnect connects cl, whose file is file.
func (c *connectCmd) runConnect(cl *clientInfo, file string, d homeDirs) (*connectReport, error) {
	data, perm, err := readClientFile(cl, file)
	if err != nil {
		return nil, err
	}
	configPath := c.config
	if configPath == "" {
		configPath = filepath.Join(d.config(), "preflight", cl.name+".yaml")
	}
	if configPath, err = filepath.Abs(configPath); err != nil {
		return nil, couldNotRun(err)
	}
	if configPath == file {
		return nil, usagef("-config %s is the client's file: give the preflight configuration a file of its own", configPath)
	}
	command := c.command
	if command == "" {
		if command, err = c.self(); err != nil {
			return nil, err
		}
	}
	p, err := planConnect(cl, file, data, command, configPath, c.selfPath(), true)
	if err != nil {
		return nil, err
	}
	backup := file + backupSuffix
	rep := p.report(backup)
	rep.DryRun = c.dryRun

	// What is in the way.
	if _, err := os.Lstat(backup); err == nil && !c.force {
		return nil, &exitError{exitFailure, fmt.Errorf("%s already exists, from an earlier preflight connect: run preflight connect -undo %s first (or remove the backup, or give -force to replace it); nothing was changed", backup, cl.name)}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, couldNotRun(err)
	}
	current, err := os.ReadFile(configPath)
	configExists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, couldNotRun(fmt.Errorf("-config %s: %w", configPath, err))
	case configExists && !bytes.Equal(current, p.yaml) && !c.force:
		return nil, &exitError{exitFailure, fmt.Errorf("%s already exists and is not what connect would write: give -config another file, or -force to replace it; nothing was changed", configPath)}
	}

	if c.dryRun {
		var before []byte
		if configExists {
			before = current
		}
		rep.Diff = unifiedDiff(file, file, data, p.rewritten) + unifiedDiff(configOrNull(configPath, configExists), configPath, before, p.yaml)
		rep.Done = append(rep.Done, "nothing was written (-dry-run)")
		return rep, nil
	}

	// The backup first, then the configuration, then the client's file; a
	// failure undoes the steps before it.
	if err := writeBackup(backup, data, perm, c.force); err != nil {
		return nil, couldNotRun(err)
	}
	if err := writeFileAtomic(configPath, p.yaml, 0o600, true); err != nil {
		os.Remove(backup)
		return nil, couldNotRun(err)
	}
	if err := writeFileAtomic(file, p.rewritten, perm, false); err != nil {
		if !configExists {
			os.Remove(configPath)
		}
		os.Remove(backup)
		return nil, couldNotRun(err)
	}
	rep.Done = append(rep.Done,
		fmt.Sprintf("wrote %s with %s", configPath, plural(len(p.moved), "server")),
		fmt.Sprintf("rewrote %s: it starts preflight now", file),
		fmt.Sprintf("kept the file as it was in %s", backup))
	return rep, nil
}

// runUndo restores cl's file from its backup.
func (c *connectCmd) runUndo(cl *clientInfo, file string, d homeDirs) (*connectReport, error) {
	backup := file + backupSuffix
	orig, err := os.ReadFile(backup)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &exitError{exitFailure, fmt.Errorf("no backup %s: %s was not connected by preflight connect (or the backup was removed); nothing to undo", backup, file)}
	} else if err != nil {
		return nil, couldNotRun(err)
	}
	info, err := os.Stat(backup)
	if err != nil {
		return nil, couldNotRun(err)
	}
	perm := info.Mode().Perm()
	cur, err := os.ReadFile(file)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, couldNotRun(err)
	}
	if fi, err := os.Stat(file); err == nil {
		perm = fi.Mode().Perm()
	}

	// What connect wrote: computed again from the backup, with the command
	// and configuration the client's file names.
	command, configPath, connected := connectedEntry(cl, cur)
	if c.config != "" {
		configPath = c.config
	}
	if configPath == "" {
		configPath = filepath.Join(d.config(), "preflight", cl.name+".yaml")
	}
	if configPath, err = filepath.Abs(configPath); err != nil {
		return nil, couldNotRun(err)
	}
	var p *connectPlan
	if connected {
		p, _ = planConnect(cl, file, orig, command, configPath, c.selfPath(), false)
	}
	rep := &connectReport{Client: cl.name, File: file, Backup: backup, Config: configPath, Command: command,
		Undo: true, DryRun: c.dryRun, Moved: []string{}, Kept: []keptServer{}, Notes: []string{}}
	if p != nil {
		rep.Moved = p.moved
	}

	restored, exact := orig, true
	switch {
	case missing || p != nil && bytes.Equal(cur, p.rewritten) || c.force:
	case p != nil && sameServers(cl, cur, p.rewritten):
		// The client changed its file outside its servers since: put the
		// servers back and keep the rest.
		merged, err := mergeBack(cl, cur, p)
		if err != nil {
			return nil, &exitError{exitFailure, fmt.Errorf("%s changed since preflight connect wrote it, and its servers cannot be put back into it (%v): compare it with %s, then give -force to restore the backup as it is", file, err, backup)}
		}
		restored, exact = merged, false
	case !connected:
		return nil, &exitError{exitFailure, fmt.Errorf("%s does not start preflight (it changed since preflight connect, or was never connected): compare it with %s, then give -force to restore the backup as it is; nothing was changed", file, backup)}
	default:
		return nil, &exitError{exitFailure, fmt.Errorf("%s changed since preflight connect wrote it, its servers too: restoring %s would lose those changes; compare the two, then give -force to restore the backup as it is; nothing was changed", file, backup)}
	}

	// The preflight configuration goes only if it is as connect wrote it.
	yamlNow, err := os.ReadFile(configPath)
	removeConfig := err == nil && p != nil && bytes.Equal(yamlNow, p.yaml)
	switch {
	case err == nil && !removeConfig:
		rep.Notes = append(rep.Notes, fmt.Sprintf("kept %s: it is not as preflight connect wrote it", configPath))
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, couldNotRun(err)
	}

	if c.dryRun {
		rep.Diff = unifiedDiff(file, file, cur, restored)
		if removeConfig {
			rep.Diff += unifiedDiff(configPath, "/dev/null", yamlNow, nil)
		}
		rep.Done = append(rep.Done, "nothing was written (-dry-run)")
		return rep, nil
	}
	if err := writeFileAtomic(file, restored, perm, false); err != nil {
		return nil, couldNotRun(err)
	}
	if exact {
		rep.Done = append(rep.Done, fmt.Sprintf("restored %s from %s", file, backup))
		if err := os.Remove(backup); err != nil {
			return nil, couldNotRun(err)
		}
	} else {
		rep.Done = append(rep.Done, fmt.Sprintf("put the servers of %s back into %s, keeping what changed since in the rest of the file; the backup stays: remove it once you are satisfied", backup, file))
	}
	if removeConfig {
		if err := os.Remove(configPath); err != nil {
			return nil, couldNotRun(err)
		}
		rep.Done = append(rep.Done, fmt.Sprintf("removed %s", configPath))
	}
	return rep, nil
}

// printConnectReport writes rep as text.
func printConnectReport(w io.Writer, cl *clientInfo, rep *connectReport) {
	if rep.Diff != "" {
		fmt.Fprint(w, rep.Diff)
	}
	if !rep.Undo && len(rep.Moved) > 0 {
		verb := "Moved"
		if rep.DryRun {
			verb = "Would move"
		}
		fmt.Fprintf(w, "%s %s from %s to %s: %s\n", verb, plural(len(rep.Moved), "server"), rep.File, rep.Config, strings.Join(rep.Moved, ", "))
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "Kept %s in %s: %s\n", k.Name, rep.File, k.Reason)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
	for _, d := range rep.Done {
		fmt.Fprintf(w, "Done: %s\n", d)
	}
	if rep.DryRun {
		return
	}
	if rep.Undo {
		fmt.Fprintf(w, "Restart %s to use its servers directly again.\n", cl.title)
		return
	}
	fmt.Fprintf(w, "Restart %s to use its servers through preflight. To undo: preflight connect -undo %s\n", cl.title, cl.name)
	fmt.Fprintf(w, "Calls that need a person (a delete, say) wait on preflight's approval page: open it with the link preflight login prints.\n")
}

// dirs are the directories the default files are found in.
type homeDirs struct {
	goos string
	home string
	// From the environment, unless -home is given.
	xdgConfig, appData, codexHome string
}

func (c *connectCmd) homeDirs() (homeDirs, error) {
	d := homeDirs{goos: c.goos}
	if d.goos == "" {
		d.goos = runtime.GOOS
	}
	getenv := c.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if c.home != "" {
		home, err := filepath.Abs(c.home)
		if err != nil {
			return d, couldNotRun(err)
		}
		d.home = home
		return d, nil
	}
	d.home = getenv("HOME")
	if d.goos == "windows" {
		d.home = getenv("USERPROFILE")
		d.appData = getenv("APPDATA")
	}
	if d.home == "" {
		return d, usagef("no home directory (HOME is not set): give -home DIR, or -file and -config")
	}
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		d.xdgConfig = x
	}
	if x := getenv("CODEX_HOME"); x != "" {
		d.codexHome = x
	}
	return d, nil
}

// config is the user's configuration directory, as os.UserConfigDir says
// it but from d.
func (d homeDirs) config() string {
	switch d.goos {
	case "windows":
		if d.appData != "" {
			return d.appData
		}
		return filepath.Join(d.home, "AppData", "Roaming")
	case "darwin", "ios":
		return filepath.Join(d.home, "Library", "Application Support")
	}
	if d.xdgConfig != "" {
		return d.xdgConfig
	}
	return filepath.Join(d.home, ".config")
}

// self returns the absolute path of the running binary, refusing one that
// go run built in a temporary directory (gone once it exits).
func (c *connectCmd) self() (string, error) {
	exe := c.executable
	if exe == nil {
		exe = os.Executable
	}
	path, err := exe()
	if err != nil {
		return "", couldNotRun(fmt.Errorf("the path of this preflight binary: %w: give -command PATH", err))
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", couldNotRun(err)
	}
	if isTemporaryBuild(path) {
		return "", usagef("this preflight is a temporary build (go run) that is gone once it exits: install it (go install github.com/preflightmcp/preflight/gateway/cmd/preflight@latest) and run that, or give -command PATH")
	}
	return path, nil
}

// isTemporaryBuild reports a binary go run built: under $GOTMPDIR or the
// temporary directory, in go-buildNNN/.
func isTemporaryBuild(path string) bool {
	for _, tmp := range []string{os.Getenv("GOTMPDIR"), os.TempDir()} {
		if tmp == "" {
			continue
		}
		rel, err := filepath.Rel(tmp, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if first, _, _ := strings.Cut(filepath.ToSlash(rel), "/"); strings.HasPrefix(first, "go-build") {
			return true
		}
	}
	return false
}

// selfPath is the running binary, to recognise entries that start it; ""
// if unknown.
func (c *connectCmd) selfPath() string {
	exe := c.executable
	if exe == nil {
		exe = os.Executable
	}
	p, err := exe()
	if err != nil {
		return ""
	}
	return p
}

// Clients.

// clientFormat is the shape of a client's file.
type clientFormat int

const (
	formatMCPServers clientFormat = iota // JSON(C) with an mcpServers object
	formatVSCode                         // JSON(C) with a servers object (and inputs)
	formatCodex                          // TOML with [mcp_servers.NAME] tables
)

// varStyle is how a client reads ${...} in its servers' values.
type varStyle int

const (
	// varsConfig: as package config reads the client's file: ${NAME},
	// ${env:NAME}, ${NAME:-default}, and the editor names ${userHome},
	// ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator}.
	varsConfig varStyle = iota
	// varsGemini: varsConfig, and $NAME.
	varsGemini
	// varsEditor: VS Code and Cursor resolve the editor names and
	// ${input:ID} themselves, per window: they are handed to preflight
	// through its entry's env.
	varsEditor
	// varsLiteral: the client reads no variables (Codex).
	varsLiteral
)

// clientInfo is one supported client.
type clientInfo struct {
	name, title string
	format      clientFormat
	vars        varStyle
	// typeStdio writes "type": "stdio" in preflight's entry.
	typeStdio bool
	// keys are the keys of a server entry connect carries, besides type,
	// command, args, env, envFile, cwd, url and headers.
	keys []string
	path func(d homeDirs) string
}

var connectClients = []*clientInfo{
	{name: "claude-desktop", title: "Claude Desktop", format: formatMCPServers, vars: varsConfig,
		path: func(d homeDirs) string { return filepath.Join(d.config(), "Claude", "claude_desktop_config.json") }},
	{name: "claude-code", title: "Claude Code", format: formatMCPServers, vars: varsConfig, typeStdio: true,
		path: func(d homeDirs) string { return filepath.Join(d.home, ".claude.json") }},
	{name: "cursor", title: "Cursor", format: formatMCPServers, vars: varsEditor,
		path: func(d homeDirs) string { return filepath.Join(d.home, ".cursor", "mcp.json") }},
	{name: "vscode", title: "VS Code", format: formatVSCode, vars: varsEditor, typeStdio: true,
		path: func(d homeDirs) string { return filepath.Join(d.config(), "Code", "User", "mcp.json") }},
	{name: "codex", title: "Codex", format: formatCodex, vars: varsLiteral,
		path: func(d homeDirs) string {
			if d.codexHome != "" {
				return filepath.Join(d.codexHome, "config.toml")
			}
			return filepath.Join(d.home, ".codex", "config.toml")
		}},
	{name: "gemini-cli", title: "Gemini CLI", format: formatMCPServers, vars: varsGemini,
		keys: []string{"httpUrl", "timeout", "includeTools", "excludeTools"},
		path: func(d homeDirs) string { return filepath.Join(d.home, ".gemini", "settings.json") }},
	{name: "windsurf", title: "Windsurf", format: formatMCPServers, vars: varsConfig,
		keys: []string{"serverUrl", "disabledTools"},
		path: func(d homeDirs) string { return filepath.Join(d.home, ".codeium", "windsurf", "mcp_config.json") }},
}

func clientNames() []string {
	names := make([]string, len(connectClients))
	for i, c := range connectClients {
		names[i] = c.name
	}
	return names
}

func lookupClient(name string) *clientInfo {
	for _, c := range connectClients {
		if c.name == name {
			return c
		}
	}
	return nil
}

// defaultTimeouts are the client's own bounds on starting a server and on
// one call, for the clients connect carries timeouts of: Codex's
// startup_timeout_sec and tool_timeout_sec, Gemini CLI's timeout.
func (cl *clientInfo) defaultTimeouts() (connect, call time.Duration) {
	switch cl.name {
	case "codex":
		return 10 * time.Second, 60 * time.Second
	case "gemini-cli":
		return 0, 10 * time.Minute
	}
	return 0, 0
}

// section is the key of the servers in the client's file.
func (cl *clientInfo) section() string {
	switch cl.format {
	case formatVSCode:
		return "servers"
	case formatCodex:
		return "mcp_servers"
	}
	return "mcpServers"
}

// readClientFile reads the client's file and its permissions.
func readClientFile(cl *clientInfo, file string) ([]byte, fs.FileMode, error) {
	info, err := os.Stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, couldNotRun(fmt.Errorf("%s does not exist: %s keeps no configuration there (start it once, or name its file with -file)", file, cl.title))
	}
	if err != nil {
		return nil, 0, couldNotRun(err)
	}
	if !info.Mode().IsRegular() {
		return nil, 0, couldNotRun(fmt.Errorf("%s is not a regular file", file))
	}
	if info.Size() > config.MaxFileSize {
		return nil, 0, couldNotRun(fmt.Errorf("%s is larger than %d bytes", file, config.MaxFileSize))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, 0, couldNotRun(err)
	}
	return data, info.Mode().Perm(), nil
}

// The plan: what connect writes.

// connectPlan is what connecting a client's file means: the file
// rewritten and the preflight configuration, computed without I/O.
type connectPlan struct {
	cl         *clientInfo
	file       string
	configPath string
	command    string
	rewritten  []byte
	yaml       []byte
	moved      []string
	kept       []keptServer
	notes      []string
	// region is what connect replaced in the client's file, as it was: the
	// servers object (JSON) or the removed tables (TOML).
	region []byte
}

func (p *connectPlan) report(backup string) *connectReport {
	return &connectReport{Client: p.cl.name, File: p.file, Backup: backup, Config: p.configPath, Command: p.command,
		Moved: p.moved, Kept: p.kept, Notes: p.notes}
}

// carried is a server as the preflight configuration has it.
type carried struct {
	name           string
	typ            string
	command        string
	args           []string
	env            []strPair
	envFile, cwd   string
	url            string
	headers        []strPair
	bearerTokenEnv string
	include        []string
	exclude        []string
	connect, call  time.Duration
}

type strPair struct{ k, v string }

// planner builds a connectPlan.
type connectPlanner struct {
	cl      *clientInfo
	file    string
	data    []byte
	command string
	config  string
	self    string
	tr      *varTranslator
	nl      string
	// validate checks the preflight configuration with config.Parse.
	validate bool

	moved []*carried
	kept  []keptServer
	notes []string
	// For preflight's own entry: Codex's env_vars, and the longest
	// timeouts of the servers moved (the client's default for those that
	// set none).
	envVars       []string
	connect, call time.Duration
}

// planConnect computes what connecting cl's file (data) means, with
// preflight started as command with the configuration configPath. self is
// the running binary ("" if unknown), to recognise entries that start it.
// validate checks the configuration as preflight serve will read it (with
// the variables of this environment); -undo, which only recomputes what
// connect wrote, does not.
func planConnect(cl *clientInfo, file string, data []byte, command, configPath, self string, validate bool) (*connectPlan, error) {
	p := &connectPlanner{cl: cl, file: file, data: data, command: command, config: configPath, self: self, nl: "\n", validate: validate,
		tr: &varTranslator{style: cl.vars, dir: filepath.Dir(file), sep: string(filepath.Separator)}}
	if bytes.Contains(data, []byte("\r\n")) {
		p.nl = "\r\n"
	}
	var plan *connectPlan
	var err error
	if cl.format == formatCodex {
		plan, err = p.planTOML()
	} else {
		plan, err = p.planJSON()
	}
	if err != nil {
		return nil, err
	}
	plan.cl, plan.file, plan.configPath, plan.command = cl, file, configPath, command
	plan.kept, plan.notes = p.kept, p.notes
	if plan.kept == nil {
		plan.kept = []keptServer{}
	}
	if plan.notes == nil {
		plan.notes = []string{}
	}
	for _, m := range p.moved {
		plan.moved = append(plan.moved, m.name)
	}
	if plan.yaml, err = p.yamlConfig(); err != nil {
		return nil, err
	}
	return plan, nil
}

// refuse is a reason connect changes nothing (exit 1).
func connectRefusal(format string, args ...any) error {
	return &exitError{exitFailure, fmt.Errorf(format, args...)}
}

// entry is one server entry of the client's file, read.
type clientEntry struct {
	name string
	v    clientValue
}

// consider carries e, or keeps it in the client's file, or refuses the
// whole file when e starts preflight.
func (p *connectPlanner) consider(e clientEntry) error {
	command, _ := e.v.get("command").str()
	args, _ := e.v.get("args").strs()
	if startsPreflight(command, args, p.self) {
		return connectRefusal("%s already starts preflight (%s.%s): %s is already connected; use preflight connect -undo %s to restore it; nothing was changed", p.file, p.cl.section(), e.name, p.cl.title, p.cl.name)
	}
	if e.name == preflightName {
		return connectRefusal("%s has a server named %q that does not start preflight: rename it, then run preflight connect again; nothing was changed", p.file, preflightName)
	}
	c, keep, err := p.carry(e)
	if err != nil {
		return couldNotRun(fmt.Errorf("%s: %s.%s: %w", p.file, p.cl.section(), e.name, err))
	}
	if keep != "" {
		p.kept = append(p.kept, keptServer{e.name, keep})
		return nil
	}
	p.moved = append(p.moved, c)
	return nil
}

// carry converts a server entry, or says why it stays in the client's
// file.
func (p *connectPlanner) carry(e clientEntry) (*carried, string, error) {
	v := e.v
	if v.kind != vObject {
		return nil, "", fmt.Errorf("expected an object, found %s", v.describe())
	}
	codex := p.cl.format == formatCodex
	if b, ok := v.get("disabled").boolean(); ok && b {
		return nil, "it is disabled", nil
	}
	if b, ok := v.get("enabled").boolean(); ok && !b {
		return nil, "it is disabled", nil
	}
	if b, ok := v.get("sandboxEnabled").boolean(); ok && b {
		return nil, "it runs in VS Code's sandbox, which preflight does not provide", nil
	}
	c := &carried{name: e.name}
	var unknown []string
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		s, e := v.get(key).str()
		if e != nil {
			err = fmt.Errorf("%s: %w", key, e)
		}
		return s
	}
	strs := func(key string) []string {
		if err != nil {
			return nil
		}
		s, e := v.get(key).strs()
		if e != nil {
			err = fmt.Errorf("%s: %w", key, e)
		}
		return s
	}
	pairs := func(key string) []strPair {
		if err != nil {
			return nil
		}
		s, e := v.get(key).pairs()
		if e != nil {
			err = fmt.Errorf("%s: %w", key, e)
		}
		return s
	}
	if codex {
		known := []string{"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers",
			"env_http_headers", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec", "enabled", "enabled_tools", "disabled_tools"}
		for _, k := range v.keys {
			if !slices.Contains(known, k) {
				unknown = append(unknown, k)
			}
		}
		c.command = p.tr.carry(str("command"))
		c.args = p.tr.carryAll(strs("args"))
		c.env = p.tr.carryPairs(pairs("env"))
		c.cwd = p.tr.carry(str("cwd"))
		c.url = p.tr.carry(str("url"))
		if c.url != "" {
			c.typ = "http" // Codex speaks streamable HTTP to a url
		}
		c.headers = p.tr.carryPairs(pairs("http_headers"))
		for _, h := range pairs("env_http_headers") {
			c.headers = append(c.headers, strPair{h.k, "${" + h.v + "}"})
			p.addEnvVar(h.v)
		}
		if c.bearerTokenEnv = str("bearer_token_env_var"); c.bearerTokenEnv != "" {
			p.addEnvVar(c.bearerTokenEnv)
		}
		if ev := v.get("env_vars"); ev.kind == vList {
			for _, item := range ev.list {
				name, _ := item.str()
				if item.kind == vObject {
					name, _ = item.get("name").str()
					if src, _ := item.get("source").str(); src == "remote" {
						p.notes = append(p.notes, fmt.Sprintf("%s: env_vars %s comes from Codex's remote environment; preflight reads it from its own", e.name, name))
					}
				}
				if name != "" {
					p.addEnvVar(name)
				}
			}
		} else if ev.kind != vAbsent {
			err = fmt.Errorf("env_vars: expected a list, found %s", ev.describe())
		}
		c.include, c.exclude = strs("enabled_tools"), strs("disabled_tools")
		if s, ok := v.get("startup_timeout_sec").number(); ok {
			c.connect = secondsOf(s)
		} else if ms, ok := v.get("startup_timeout_ms").number(); ok {
			c.connect = secondsOf(ms / 1000)
		}
		if s, ok := v.get("tool_timeout_sec").number(); ok {
			c.call = secondsOf(s)
		}
	} else {
		known := append([]string{"type", "command", "args", "env", "envFile", "cwd", "url", "headers", "disabled", "enabled"}, p.cl.keys...)
		if p.cl.name == "vscode" {
			known = append(known, "sandboxEnabled", "sandbox")
		}
		for _, k := range v.keys {
			if !slices.Contains(known, k) {
				unknown = append(unknown, k)
			}
		}
		switch t := str("type"); t {
		case "", "stdio", "http", "sse":
			c.typ = t
		case "streamable-http", "streamableHttp", "streamable_http":
			c.typ = "http"
		default:
			return nil, fmt.Sprintf("its type %q is not one preflight serves (stdio, http or sse)", t), err
		}
		c.command = p.tr.carry(str("command"))
		c.args = p.tr.carryAll(strs("args"))
		c.env = p.tr.carryPairs(pairs("env"))
		c.envFile = p.tr.carry(str("envFile"))
		c.cwd = p.tr.carry(str("cwd"))
		c.url = p.tr.carry(str("url"))
		c.headers = p.tr.carryPairs(pairs("headers"))
		switch p.cl.name {
		case "gemini-cli":
			// Gemini CLI: httpUrl is streamable HTTP, url is SSE.
			if h := p.tr.carry(str("httpUrl")); h != "" {
				c.url = h
				if c.typ == "" {
					c.typ = "http"
				}
			} else if c.url != "" && c.typ == "" {
				c.typ = "sse"
			}
			if ms, ok := v.get("timeout").number(); ok {
				c.call = secondsOf(ms / 1000)
			}
			c.include, c.exclude = strs("includeTools"), strs("excludeTools")
		case "windsurf":
			if s := p.tr.carry(str("serverUrl")); s != "" {
				c.url = s
				if u, perr := url.Parse(s); c.typ == "" && perr == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") {
					c.typ = "sse"
				}
			}
			c.exclude = strs("disabledTools")
		}
	}
	if err != nil {
		return nil, "", err
	}
	if c.command == "" && c.url == "" {
		return nil, "it has neither a command nor a url", nil
	}
	c.cwd = p.absolute(c.cwd)
	c.envFile = p.absolute(c.envFile)
	if len(unknown) > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%s: %s not carried: preflight has no equivalent", e.name, strings.Join(unknown, ", ")))
	}
	// Preflight's entry needs the longest of the servers' timeouts, theirs
	// or the client's default.
	dc, dcall := p.cl.defaultTimeouts()
	p.connect = max(p.connect, cmp.Or(c.connect, dc))
	p.call = max(p.call, cmp.Or(c.call, dcall))
	return c, "", nil
}

// absolute makes a relative path absolute against the client file's
// directory, as package config resolves the client's file: the preflight
// configuration is elsewhere.
func (p *connectPlanner) absolute(path string) string {
	if path == "" || strings.HasPrefix(path, "${") || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(escapeVars(p.tr.dir), path)
}

func (p *connectPlanner) addEnvVar(name string) {
	if name != "" && !slices.Contains(p.envVars, name) {
		p.envVars = append(p.envVars, name)
	}
}

// seconds converts a number of seconds, bounded.
func secondsOf(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	if s > 365*24*3600 {
		s = 365 * 24 * 3600
	}
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond)
}

// preflightArgs are the arguments of preflight's entry.
func (p *connectPlanner) preflightArgs() []string {
	return []string{"serve", "-stdio", "-config", p.config}
}

// noServers is the refusal when nothing can be moved.
func (p *connectPlanner) noServers() error {
	if len(p.kept) > 0 {
		names := make([]string, len(p.kept))
		for i, k := range p.kept {
			names[i] = k.Name + " (" + k.Reason + ")"
		}
		return connectRefusal("%s has no server preflight can take over: %s; nothing was changed", p.file, strings.Join(names, "; "))
	}
	return connectRefusal("%s has no MCP servers (%s) to move; nothing was changed", p.file, p.cl.section())
}

// check validates the preflight configuration the moved servers make.
func (p *connectPlanner) check(data []byte) error {
	env := func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		return "http://preflight-connect-check", true // any value: the variable is the client's to set
	}
	_, err := config.Parse(p.config, data, env)
	if err == nil {
		return nil
	}
	var lines []string
	var errs config.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			lines = append(lines, "  "+strings.TrimPrefix(e.Path+": ", ": ")+e.Msg)
		}
	} else {
		lines = append(lines, "  "+err.Error())
	}
	return connectRefusal("the servers of %s do not make a valid preflight configuration:\n%s\nfix them in %s (or remove them), then run preflight connect again; nothing was changed", p.file, strings.Join(lines, "\n"), p.file)
}

// yamlConfig writes the moved servers as a preflight configuration.
func (p *connectPlanner) yamlConfig() ([]byte, error) {
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	seq := func(items []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, s := range items {
			n.Content = append(n.Content, str(s))
		}
		return n
	}
	servers := &yaml.Node{Kind: yaml.MappingNode}
	for _, c := range p.moved {
		m := &yaml.Node{Kind: yaml.MappingNode}
		add := func(key string, v *yaml.Node) { m.Content = append(m.Content, str(key), v) }
		field := func(key, v string) {
			if v != "" {
				add(key, str(v))
			}
		}
		pairs := func(key string, kvs []strPair) {
			if len(kvs) > 0 {
				n := &yaml.Node{Kind: yaml.MappingNode}
				for _, e := range kvs {
					n.Content = append(n.Content, str(e.k), str(e.v))
				}
				add(key, n)
			}
		}
		field("type", c.typ)
		field("command", c.command)
		if c.args != nil {
			add("args", seq(c.args))
		}
		pairs("env", c.env)
		field("envFile", c.envFile)
		field("cwd", c.cwd)
		field("url", c.url)
		pairs("headers", c.headers)
		field("bearerTokenEnv", c.bearerTokenEnv)
		if c.include != nil {
			add("include", seq(c.include))
		}
		if c.exclude != nil {
			add("exclude", seq(c.exclude))
		}
		if c.connect > 0 || c.call > 0 {
			var t []strPair
			if c.connect > 0 {
				t = append(t, strPair{"connect", shortDuration(c.connect)})
				if c.connect < config.DefaultDiscoverTimeout {
					t = append(t, strPair{"discover", shortDuration(c.connect)})
				}
			}
			if c.call > 0 {
				t = append(t, strPair{"call", shortDuration(c.call)})
			}
			pairs("timeouts", t)
		}
		servers.Content = append(servers.Content, str(c.name), m)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("servers"), servers}}
	head := fmt.Sprintf("yaml-language-server: $schema=%s\n\nThe MCP servers of %s,\nmoved here by preflight connect %s. %s starts\npreflight serve -stdio -config with this file;\npreflight connect -undo %s puts them back.",
		config.SchemaURL, commentText(p.file), p.cl.name, p.cl.title, p.cl.name)
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}, HeadComment: head}
	out, err := yaml.Dump(doc, yaml.WithIndent(2), yaml.WithLineWidth(-1))
	if err != nil {
		return nil, couldNotRun(fmt.Errorf("writing the preflight configuration: %w", err))
	}
	if p.validate {
		if err := p.check(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// commentText is s made safe for one line of a YAML comment.
func commentText(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) {
		return strconv.Quote(s)
	}
	return s
}

// shortDuration writes d as config reads it, without zero units: 2m, not
// 2m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// JSON clients.

func (p *connectPlanner) planJSON() (*connectPlan, error) {
	doc, err := parseJSONC(p.data)
	if err != nil {
		return nil, couldNotRun(fmt.Errorf("%s: %w", p.file, err))
	}
	if doc.root.kind != '{' {
		return nil, couldNotRun(fmt.Errorf("%s: expected a JSON object at the top", p.file))
	}
	key := p.cl.section()
	m, err := doc.root.member(key)
	if err != nil {
		return nil, couldNotRun(fmt.Errorf("%s: %w", p.file, err))
	}
	if m == nil {
		return nil, p.noServers()
	}
	if m.val.kind != '{' {
		return nil, couldNotRun(fmt.Errorf("%s: %s: expected an object of servers", p.file, key))
	}
	servers := m.val
	if _, err := servers.member(""); err != nil { // duplicate names
		return nil, couldNotRun(fmt.Errorf("%s: %s: %w", p.file, key, err))
	}
	for _, s := range servers.members {
		if err := p.consider(clientEntry{s.key, doc.valueOf(s.val)}); err != nil {
			return nil, err
		}
	}
	if len(p.moved) == 0 {
		return nil, p.noServers()
	}
	text := p.serversJSON(doc, m)
	out := slices.Concat(p.data[:servers.start], []byte(text), p.data[servers.end:])
	if err := p.verifyJSON(out); err != nil {
		return nil, err
	}
	return &connectPlan{rewritten: out, region: p.data[servers.start:servers.end]}, nil
}

// preflightEntryJSON is the fields of preflight's entry in a JSON client.
func (p *connectPlanner) preflightEntryJSON() []jfield {
	var f []jfield
	if p.cl.typeStdio {
		f = append(f, jfield{"type", "stdio"})
	}
	f = append(f, jfield{"command", p.command}, jfield{"args", p.preflightArgs()})
	if len(p.tr.env) > 0 {
		f = append(f, jfield{"env", p.tr.env})
	}
	if _, def := p.cl.defaultTimeouts(); p.cl.name == "gemini-cli" && p.call > def {
		f = append(f, jfield{"timeout", p.call.Milliseconds()})
	}
	return f
}

// serversJSON is the new servers object: preflight's entry where the first
// server moved was, and the servers kept, as they were.
func (p *connectPlanner) serversJSON(doc *jsonDoc, m *jmember) string {
	servers := m.val
	pretty := bytes.ContainsRune(p.data[servers.start:servers.end], '\n')
	indent := lineIndent(p.data, m.keyStart)
	unit := "  "
	if len(servers.members) > 0 {
		if in := lineIndent(p.data, servers.members[0].keyStart); len(in) > len(indent) && strings.HasPrefix(in, indent) {
			unit = in[len(indent):]
		}
	} else if len(doc.root.members) > 0 {
		if in := lineIndent(p.data, doc.root.members[0].keyStart); in != "" {
			unit = in
		}
	}
	w := &jsonWriter{pretty: pretty, unit: unit, nl: p.nl}
	moved := map[string]bool{}
	for _, c := range p.moved {
		moved[c.name] = true
	}
	var b strings.Builder
	b.WriteString("{")
	first, placed := true, false
	sep := func() {
		if !first {
			b.WriteString(",")
		}
		first = false
		if pretty {
			b.WriteString(p.nl + indent + unit)
		}
	}
	colon := ":"
	if pretty {
		colon = ": "
	}
	for _, s := range servers.members {
		if moved[s.key] {
			if !placed {
				sep()
				b.WriteString(jsonString(preflightName) + colon)
				w.object(&b, p.preflightEntryJSON(), indent+unit)
				placed = true
			}
			continue
		}
		sep()
		b.Write(p.data[s.keyStart:s.keyEnd])
		b.WriteString(colon)
		b.Write(p.data[s.val.start:s.val.end])
	}
	if pretty {
		b.WriteString(p.nl + indent)
	}
	b.WriteString("}")
	return b.String()
}

// verifyJSON checks the rewritten file: valid, its servers preflight and
// the ones kept.
func (p *connectPlanner) verifyJSON(out []byte) error {
	doc, err := parseJSONC(out)
	if err == nil {
		var m *jmember
		if m, err = doc.root.member(p.cl.section()); err == nil && m != nil {
			var names []string
			for _, s := range m.val.members {
				names = append(names, s.key)
			}
			want := []string{preflightName}
			for _, k := range p.kept {
				want = append(want, k.Name)
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				err = fmt.Errorf("servers %v, want %v", names, want)
			}
		} else if err == nil {
			err = errors.New("no servers")
		}
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("%s: connect would write a broken file (%v); nothing was changed: please report this", p.file, err))
	}
	return nil
}

// jfield is a field of a JSON object connect writes: its value is a
// string, []string, []kv (an object of strings) or int64.
type jfield struct {
	key string
	val any
}

// jsonWriter writes JSON as the file around it is written: indented by
// unit per level (JSON.stringify's layout), or compact.
type jsonWriter struct {
	pretty   bool
	unit, nl string
}

func (w *jsonWriter) object(b *strings.Builder, fields []jfield, indent string) {
	colon := ":"
	if w.pretty {
		colon = ": "
	}
	b.WriteString("{")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		w.line(b, indent+w.unit)
		b.WriteString(jsonString(f.key) + colon)
		switch v := f.val.(type) {
		case string:
			b.WriteString(jsonString(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case []string:
			b.WriteString("[")
			for j, s := range v {
				if j > 0 {
					b.WriteString(",")
				}
				w.line(b, indent+w.unit+w.unit)
				b.WriteString(jsonString(s))
			}
			w.line(b, indent+w.unit)
			b.WriteString("]")
		case []strPair:
			var sub []jfield
			for _, e := range v {
				sub = append(sub, jfield{e.k, e.v})
			}
			w.object(b, sub, indent+w.unit)
		}
	}
	w.line(b, indent)
	b.WriteString("}")
}

func (w *jsonWriter) line(b *strings.Builder, indent string) {
	if w.pretty {
		b.WriteString(w.nl + indent)
	}
}

// jsonString encodes s as a JSON string, HTML characters as they are.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// lineIndent is the white space that starts the line holding offset off.
func lineIndent(data []byte, off int) string {
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	end := start
	for end < off && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// TOML (Codex).

func (p *connectPlanner) planTOML() (*connectPlan, error) {
	var doc struct {
		MCPServers map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(p.data, &doc); err != nil {
		return nil, couldNotRun(fmt.Errorf("%s: %s", p.file, tomlError(err)))
	}
	items, err := scanTOML(p.data)
	if err != nil {
		return nil, couldNotRun(fmt.Errorf("%s: %s", p.file, tomlError(err)))
	}
	// The servers in the order the file has them.
	var names []string
	for _, it := range items {
		if it.owner != "" && it.owner != "*" && !slices.Contains(names, it.owner) {
			names = append(names, it.owner)
		}
	}
	for _, n := range sortedNames(doc.MCPServers) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if err := p.consider(clientEntry{n, tomlValue(doc.MCPServers[n])}); err != nil {
			return nil, err
		}
	}
	if len(p.moved) == 0 {
		return nil, p.noServers()
	}
	moved := map[string]bool{}
	for _, c := range p.moved {
		moved[c.name] = true
	}
	// What goes: the tables (and keys) of the servers moved.
	var cut []tomlItem
	for _, it := range items {
		switch {
		case it.owner == "*" && len(p.kept) > 0:
			return nil, connectRefusal("%s defines mcp_servers in one inline table, with servers that stay (%s): write each server as a [mcp_servers.NAME] table, then run preflight connect again; nothing was changed", p.file, p.kept[0].Name)
		case it.owner == "*" || moved[it.owner]:
			cut = append(cut, it)
		}
	}
	block := p.preflightTOML()
	var out, region []byte
	at := -1 // where preflight's table goes: where the first table cut was
	for _, it := range cut {
		if it.header {
			at = it.start
			if strings.HasSuffix(string(p.data[it.start:it.end]), p.nl+p.nl) {
				block += p.nl
			}
			break
		}
	}
	last := 0
	for _, it := range cut {
		out = append(out, p.data[last:it.start]...)
		if it.start == at {
			out = append(out, block...)
		}
		region = append(region, p.data[it.start:it.end]...)
		last = it.end
	}
	out = append(out, p.data[last:]...)
	if at < 0 {
		if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, p.nl...)
		}
		if len(out) > 0 && !bytes.HasSuffix(out, []byte(p.nl+p.nl)) {
			out = append(out, p.nl...)
		}
		out = append(out, block...)
	}
	if err := p.verifyTOML(out); err != nil {
		return nil, err
	}
	return &connectPlan{rewritten: out, region: region}, nil
}

// preflightTOML is preflight's table in Codex's file.
func (p *connectPlanner) preflightTOML() string {
	lines := []string{
		"[mcp_servers." + preflightName + "]",
		"command = " + tomlString(p.command),
		"args = " + tomlStrings(p.preflightArgs()),
	}
	if len(p.envVars) > 0 {
		lines = append(lines, "env_vars = "+tomlStrings(p.envVars))
	}
	dc, dcall := p.cl.defaultTimeouts()
	if p.connect > dc {
		lines = append(lines, "startup_timeout_sec = "+strconv.FormatFloat(p.connect.Seconds(), 'f', -1, 64))
	}
	if p.call > dcall {
		lines = append(lines, "tool_timeout_sec = "+strconv.FormatFloat(p.call.Seconds(), 'f', -1, 64))
	}
	return strings.Join(lines, p.nl) + p.nl
}

// verifyTOML checks the rewritten file: valid, its servers preflight's
// (as written) and the ones kept.
func (p *connectPlanner) verifyTOML(out []byte) error {
	var doc struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	err := toml.Unmarshal(out, &doc)
	if err == nil {
		want := []string{preflightName}
		for _, k := range p.kept {
			want = append(want, k.Name)
		}
		slices.Sort(want)
		if got := sortedNames(doc.MCPServers); !slices.Equal(got, want) {
			err = fmt.Errorf("servers %v, want %v", got, want)
		} else if cmd, _ := doc.MCPServers[preflightName]["command"].(string); cmd != p.command {
			err = fmt.Errorf("preflight's command is %q", cmd)
		}
	}
	if err != nil {
		return couldNotRun(fmt.Errorf("%s: connect would write a broken file (%v); nothing was changed: please report this", p.file, err))
	}
	return nil
}

// tomlError describes a TOML syntax error with its line and column.
func tomlError(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		return fmt.Sprintf("line %d, column %d: not valid TOML: %s", line, col, de.Error())
	}
	var pe *unstable.ParserError
	if errors.As(err, &pe) {
		return "not valid TOML: " + pe.Message
	}
	return "not valid TOML: " + err.Error()
}

// tomlItem is a stretch of a TOML file that defines (part of) one server
// of mcp_servers: a table with its keys, or one key.
type tomlItem struct {
	start, end int
	// owner is the server the item defines; "*" when it defines all
	// (an inline mcp_servers table); "" for none.
	owner string
	// header reports a table, [mcp_servers.NAME...].
	header bool
}

// scanTOML finds the tables and keys of a TOML file that define servers of
// mcp_servers, with the lines they span. The comment lines right above a
// table (no blank line between) go with it.
func scanTOML(data []byte) ([]tomlItem, error) {
	type expr struct {
		kind  unstable.Kind
		key   []string
		start int // the start of its line
	}
	var exprs []expr
	p := unstable.Parser{KeepComments: true}
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		x := expr{kind: e.Kind}
		off := -1
		switch e.Kind {
		case unstable.Comment:
			off = int(e.Raw.Offset)
		case unstable.Table, unstable.ArrayTable, unstable.KeyValue:
			for it := e.Key(); it.Next(); {
				k := it.Node()
				if off < 0 {
					off = int(k.Raw.Offset)
				}
				x.key = append(x.key, string(k.Data))
			}
		default:
			continue
		}
		if off < 0 {
			continue
		}
		x.start = bytes.LastIndexByte(data[:off], '\n') + 1
		exprs = append(exprs, x)
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	isTable := func(k unstable.Kind) bool { return k == unstable.Table || k == unstable.ArrayTable }
	// Tables start at the comment lines right above them: each a line of
	// its own, with no blank line between.
	starts := make([]int, len(exprs))
	for i, x := range exprs {
		starts[i] = x.start
		if !isTable(x.kind) {
			continue
		}
		for j := i - 1; j >= 0 && exprs[j].kind == unstable.Comment; j-- {
			if bytes.Count(data[exprs[j].start:starts[i]], []byte("\n")) != 1 {
				break
			}
			starts[i] = exprs[j].start
		}
	}
	// Where each table's span ends: the start of the next table.
	next := func(i int) int {
		for j := i + 1; j < len(exprs); j++ {
			if isTable(exprs[j].kind) {
				return starts[j]
			}
		}
		return len(data)
	}
	nextExpr := func(i, limit int) int {
		if i+1 < len(exprs) && starts[i+1] < limit {
			return starts[i+1]
		}
		return limit
	}
	var items []tomlItem
	var table []string // the current table's key; nil at the top
	tableEnd := next(-1)
	for i, x := range exprs {
		switch {
		case isTable(x.kind):
			table, tableEnd = x.key, next(i)
			if len(x.key) >= 2 && x.key[0] == "mcp_servers" {
				items = append(items, tomlItem{start: starts[i], end: tableEnd, owner: x.key[1], header: true})
			}
		case x.kind != unstable.KeyValue:
		case table == nil && len(x.key) >= 1 && x.key[0] == "mcp_servers":
			owner := "*"
			if len(x.key) >= 2 {
				owner = x.key[1]
			}
			items = append(items, tomlItem{start: starts[i], end: nextExpr(i, tableEnd), owner: owner})
		case len(table) == 1 && table[0] == "mcp_servers":
			items = append(items, tomlItem{start: starts[i], end: nextExpr(i, tableEnd), owner: x.key[0]})
		}
	}
	return items, nil
}

// tomlString encodes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlStrings(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Undo.

// connectedEntry finds preflight's entry in a client's file and returns
// the command it starts and the configuration it serves.
func connectedEntry(cl *clientInfo, data []byte) (command, configPath string, ok bool) {
	if data == nil {
		return "", "", false
	}
	var servers []clientEntry
	if cl.format == formatCodex {
		var doc struct {
			MCPServers map[string]any `toml:"mcp_servers"`
		}
		if toml.Unmarshal(data, &doc) != nil {
			return "", "", false
		}
		for _, n := range sortedNames(doc.MCPServers) {
			servers = append(servers, clientEntry{n, tomlValue(doc.MCPServers[n])})
		}
	} else {
		doc, err := parseJSONC(data)
		if err != nil || doc.root.kind != '{' {
			return "", "", false
		}
		m, err := doc.root.member(cl.section())
		if err != nil || m == nil || m.val.kind != '{' {
			return "", "", false
		}
		for _, s := range m.val.members {
			servers = append(servers, clientEntry{s.key, doc.valueOf(s.val)})
		}
	}
	for _, s := range servers {
		if s.name != preflightName {
			continue
		}
		command, _ = s.v.get("command").str()
		args, _ := s.v.get("args").strs()
		if cfg, found := configArg(args); found {
			return command, cfg, true
		}
	}
	return "", "", false
}

// sameServers reports whether a and b, two versions of a client's file,
// have the same servers.
func sameServers(cl *clientInfo, a, b []byte) bool {
	servers := func(data []byte) (any, bool) {
		if cl.format == formatCodex {
			var doc struct {
				MCPServers map[string]any `toml:"mcp_servers"`
			}
			if toml.Unmarshal(data, &doc) != nil {
				return nil, false
			}
			return doc.MCPServers, true
		}
		doc, err := parseJSONC(data)
		if err != nil || doc.root.kind != '{' {
			return nil, false
		}
		m, err := doc.root.member(cl.section())
		if err != nil || m == nil {
			return nil, false
		}
		var v any
		if json.Unmarshal(doc.clean[m.val.start:m.val.end], &v) != nil {
			return nil, false
		}
		return v, true
	}
	va, oka := servers(a)
	vb, okb := servers(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// mergeBack puts the servers connect moved back into cur, a version of the
// client's file changed since outside its servers: the servers object of
// the backup (JSON), or its tables in place of preflight's (TOML).
func mergeBack(cl *clientInfo, cur []byte, p *connectPlan) ([]byte, error) {
	if cl.format == formatCodex {
		items, err := scanTOML(cur)
		if err != nil {
			return nil, err
		}
		var out []byte
		last, placed := 0, false
		for _, it := range items {
			if it.owner != preflightName {
				continue
			}
			out = append(out, cur[last:it.start]...)
			if !placed {
				out = append(out, p.region...)
				placed = true
			}
			last = it.end
		}
		if !placed {
			return nil, errors.New("no [mcp_servers.preflight] table")
		}
		return append(out, cur[last:]...), nil
	}
	doc, err := parseJSONC(cur)
	if err != nil {
		return nil, err
	}
	m, err := doc.root.member(cl.section())
	if err != nil || m == nil {
		return nil, fmt.Errorf("no %s object", cl.section())
	}
	return slices.Concat(cur[:m.val.start], p.region, cur[m.val.end:]), nil
}

// Recognising preflight.

// startsPreflight reports whether a server entry starts preflight: its
// command is a preflight binary (or self, the running one), or go run of
// preflight's command, or its args run serve with -config in a preflight
// directory.
func startsPreflight(command string, args []string, self string) bool {
	base := strings.ToLower(command[strings.LastIndexAny(command, `/\`)+1:])
	if strings.TrimSuffix(base, ".exe") == preflightName || self != "" && command == self {
		return true
	}
	if !slices.Contains(args, "serve") {
		return false
	}
	for _, a := range args {
		a = strings.TrimRight(filepath.ToSlash(a), "/")
		if strings.HasSuffix(a, "cmd/preflight") || strings.Contains(a, "preflightmcp/preflight") {
			return true
		}
	}
	cfg, ok := configArg(args)
	if !ok {
		return false
	}
	parts := strings.FieldsFunc(cfg, func(r rune) bool { return r == '/' || r == '\\' })
	return len(parts) > 1 && slices.ContainsFunc(parts[:len(parts)-1], func(s string) bool { return strings.EqualFold(s, preflightName) })
}

// configArg returns the value of -config in args.
func configArg(args []string) (string, bool) {
	for i, a := range args {
		switch {
		case (a == "-config" || a == "--config") && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(a, "-config="):
			return strings.TrimPrefix(a, "-config="), true
		case strings.HasPrefix(a, "--config="):
			return strings.TrimPrefix(a, "--config="), true
		}
	}
	return "", false
}

// selfReferential reports a configuration, read from path, that would
// make preflight serve start itself without end: a server that runs
// preflight serve -config on the same file, directly or through the
// configurations of other such servers. preflight serve -config calls it
// before it starts anything.
func selfReferential(cfg *config.Config, path string) error {
	self, _ := os.Executable()
	cwd, _ := os.Getwd()
	target, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	seen := map[string]bool{filepath.Clean(target): true}
	var walk func(cfg *config.Config, via []string, depth int) error
	walk = func(cfg *config.Config, via []string, depth int) error {
		for _, name := range cfg.Names() {
			s := cfg.Servers[name]
			if s.Type != config.TransportStdio || !slices.Contains(s.Args, "serve") || !startsPreflight(s.Command, s.Args, self) {
				continue
			}
			arg, ok := configArg(s.Args)
			if !ok {
				continue // the built-in setup
			}
			dir := s.Cwd
			if dir == "" {
				dir = cwd
			}
			file := arg
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			here := append(slices.Clone(via), fmt.Sprintf("servers.%s starts preflight serve -config %s", name, file))
			if sameFile(file, target) {
				return fmt.Errorf("%s: %s, this same file: the gateway would start itself without end; remove that server, or point it at another configuration", path, strings.Join(here, ", whose "))
			}
			if depth >= 8 || seen[filepath.Clean(file)] {
				continue
			}
			seen[filepath.Clean(file)] = true
			if next, err := config.Load(file); err == nil {
				if err := walk(next, here, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(cfg, nil, 0)
}

// sameFile reports whether a and b name the same file.
func sameFile(a, b string) bool {
	ia, erra := os.Stat(a)
	ib, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return os.SameFile(ia, ib)
	}
	return filepath.Clean(a) == filepath.Clean(b)
}

// Variables.

// translator carries the string values of a client's servers into the
// preflight configuration, with their ${...} references.
type varTranslator struct {
	style varStyle
	dir   string // the client file's directory
	sep   string // the path separator
	// env is what preflight's entry passes it (varsEditor): variable
	// names and the client's expressions for them.
	env []strPair
}

func (t *varTranslator) carry(s string) string {
	switch t.style {
	case varsLiteral:
		return escapeVars(s)
	case varsGemini:
		s = dollarNames(s)
	}
	return mapVars(s, func(expr string) (string, bool) {
		switch {
		case expr == "pathSeparator" || expr == "/":
			return escapeVars(t.sep), true
		case t.style == varsEditor:
			return t.handOver(expr)
		case expr == "userHome":
			if t.sep == `\` {
				return "${USERPROFILE}", true
			}
			return "${HOME}", true
		case expr == "workspaceFolder":
			return escapeVars(t.workspace()), true
		case expr == "workspaceFolderBasename":
			return escapeVars(filepath.Base(t.workspace())), true
		}
		return "", false
	})
}

func (t *varTranslator) carryAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = t.carry(s)
	}
	return out
}

func (t *varTranslator) carryPairs(kvs []strPair) []strPair {
	for i := range kvs {
		kvs[i].v = t.carry(kvs[i].v)
	}
	return kvs
}

// handOver replaces an editor's variable with one preflight reads from its
// environment, which its entry sets to the editor's expression.
func (t *varTranslator) handOver(expr string) (string, bool) {
	var name string
	switch {
	case strings.HasPrefix(expr, "input:") && !strings.Contains(expr, ":-"):
		name = "PREFLIGHT_INPUT_" + inputEnvName(strings.TrimPrefix(expr, "input:"))
	case expr == "workspaceFolder":
		name = "PREFLIGHT_WORKSPACE_FOLDER"
	case expr == "workspaceFolderBasename":
		name = "PREFLIGHT_WORKSPACE_FOLDER_BASENAME"
	case expr == "userHome":
		name = "PREFLIGHT_USER_HOME"
	default:
		return "", false
	}
	expanded, base := "${"+expr+"}", name
	for n := 2; ; n++ {
		i := slices.IndexFunc(t.env, func(e strPair) bool { return e.k == name })
		if i < 0 {
			t.env = append(t.env, strPair{name, expanded})
			break
		}
		if t.env[i].v == expanded {
			break
		}
		name = base + "_" + strconv.Itoa(n) // two inputs whose ids differ only in punctuation
	}
	return "${" + name + "}", true
}

// workspace is the folder package config calls the workspace of the file:
// the one holding .vscode or .cursor, else the file's.
func (t *varTranslator) workspace() string {
	if base := filepath.Base(t.dir); base == ".vscode" || base == ".cursor" {
		return filepath.Dir(t.dir)
	}
	return t.dir
}

// mapVars returns s with each ${expr} replaced by f(expr) when f says so;
// $${ stays as it is.
func mapVars(s string, f func(expr string) (string, bool)) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("$${")
			i += 3
			continue
		case !strings.HasPrefix(s[i:], "${"):
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			b.WriteString(s[i:])
			break
		}
		if r, ok := f(s[i+2 : i+2+end]); ok {
			b.WriteString(r)
		} else {
			b.WriteString(s[i : i+3+end])
		}
		i += 3 + end
	}
	return b.String()
}

// escapeVars writes every ${ of a literal value as $${, which preflight
// reads as ${.
func escapeVars(s string) string { return strings.ReplaceAll(s, "${", "$${") }

// dollarNames rewrites Gemini CLI's $NAME as ${NAME}.
func dollarNames(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			b.WriteString(s[i : i+end+1])
			i += end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			continue
		}
		b.WriteString("${" + s[i+1:j] + "}")
		i = j - 1
	}
	return b.String()
}

// envName is id in upper case with every character other than a letter or
// a digit as "_".
func inputEnvName(id string) string {
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

// Values read from a client's file.

type clientValueKind int

const (
	vAbsent clientValueKind = iota
	vNull
	vString
	vNumber
	vBool
	vList
	vObject
)

// value is a JSON or TOML value; objects keep their keys' order.
type clientValue struct {
	kind clientValueKind
	text string // a string, or the text of a number or bool
	num  float64
	list []clientValue
	keys []string
	vals []clientValue
}

func (v clientValue) get(key string) clientValue {
	if i := slices.Index(v.keys, key); i >= 0 {
		return v.vals[i]
	}
	return clientValue{}
}

func (v clientValue) describe() string {
	return [...]string{"nothing", "null", "a string", "a number", "a boolean", "a list", "an object"}[v.kind]
}

// str returns a string, or the text of a number or bool.
func (v clientValue) str() (string, error) {
	switch v.kind {
	case vAbsent, vNull:
		return "", nil
	case vString, vNumber, vBool:
		return v.text, nil
	}
	return "", fmt.Errorf("expected a string, found %s", v.describe())
}

func (v clientValue) strs() ([]string, error) {
	switch v.kind {
	case vAbsent, vNull:
		return nil, nil
	case vList:
	default:
		return nil, fmt.Errorf("expected a list of strings, found %s", v.describe())
	}
	out := []string{}
	for i, item := range v.list {
		s, err := item.str()
		if err != nil || item.kind == vNull {
			return nil, fmt.Errorf("[%d]: expected a string, found %s", i, item.describe())
		}
		out = append(out, s)
	}
	return out, nil
}

func (v clientValue) pairs() ([]strPair, error) {
	switch v.kind {
	case vAbsent, vNull:
		return nil, nil
	case vObject:
	default:
		return nil, fmt.Errorf("expected an object of strings, found %s", v.describe())
	}
	var out []strPair
	for i, k := range v.keys {
		if v.vals[i].kind == vNull {
			continue
		}
		s, err := v.vals[i].str()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, strPair{k, s})
	}
	return out, nil
}

func (v clientValue) boolean() (bool, bool) {
	return v.text == "true", v.kind == vBool
}

func (v clientValue) number() (float64, bool) {
	return v.num, v.kind == vNumber
}

// tomlValue converts what go-toml decodes into a value; an object's keys
// are sorted (TOML tables have no order that matters).
func tomlValue(x any) clientValue {
	switch x := x.(type) {
	case nil:
		return clientValue{kind: vNull}
	case string:
		return clientValue{kind: vString, text: x}
	case bool:
		return clientValue{kind: vBool, text: strconv.FormatBool(x)}
	case int64:
		return clientValue{kind: vNumber, text: strconv.FormatInt(x, 10), num: float64(x)}
	case float64:
		return clientValue{kind: vNumber, text: strconv.FormatFloat(x, 'f', -1, 64), num: x}
	case []any:
		v := clientValue{kind: vList}
		for _, item := range x {
			v.list = append(v.list, tomlValue(item))
		}
		return v
	case map[string]any:
		v := clientValue{kind: vObject}
		for _, k := range sortedNames(x) {
			v.keys = append(v.keys, k)
			v.vals = append(v.vals, tomlValue(x[k]))
		}
		return v
	}
	return clientValue{kind: vString, text: fmt.Sprint(x)} // dates and times
}

// JSON with comments (JSONC), with the offsets of every value.

// jsonDoc is a parsed JSON(C) file.
type jsonDoc struct {
	data  []byte // as read
	clean []byte // comments and trailing commas blanked out: plain JSON, same offsets
	root  *jnode
}

// jnode is a value of a jsonDoc: its kind ('{', '[', '"' or 'v' for a
// number, true, false, null) and where it is.
type jnode struct {
	kind       byte
	start, end int
	members    []jmember // objects
	items      []*jnode  // arrays
}

type jmember struct {
	key      string
	keyStart int
	keyEnd   int
	val      *jnode
}

// member returns the member named key; an error if two have that name
// (any two, with key "").
func (n *jnode) member(key string) (*jmember, error) {
	var found *jmember
	seen := map[string]bool{}
	for i := range n.members {
		m := &n.members[i]
		if seen[m.key] && (key == "" || m.key == key) {
			return nil, fmt.Errorf("%q is there twice", m.key)
		}
		seen[m.key] = true
		if m.key == key && key != "" {
			found = m
		}
	}
	return found, nil
}

// maxJSONDepth bounds nesting, so that a hostile file cannot exhaust the
// stack.
const maxJSONDepth = 1000

// parseJSONC parses a JSON file that may hold // and /* */ comments and
// trailing commas, as VS Code, Cursor and Gemini CLI allow.
func parseJSONC(data []byte) (*jsonDoc, error) {
	clean, bad := jsonc.Strip(data)
	if bad >= 0 {
		line, col := jsonLineCol(data, bad)
		return nil, fmt.Errorf("line %d, column %d: unterminated comment", line, col)
	}
	start := 0
	if bytes.HasPrefix(clean, []byte("\uFEFF")) {
		start = 3
		copy(clean, "   ")
	}
	var probe any
	if err := json.Unmarshal(clean, &probe); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := jsonLineCol(data, int(se.Offset))
			return nil, fmt.Errorf("line %d, column %d: not valid JSON: %v", line, col, se)
		}
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	s := &jscan{data: clean, i: start}
	root, err := s.scan(0)
	if err != nil {
		return nil, err
	}
	return &jsonDoc{data: data, clean: clean, root: root}, nil
}

// value reads n's value into a value.
func (d *jsonDoc) valueOf(n *jnode) clientValue {
	raw := d.clean[n.start:n.end]
	switch n.kind {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s) // validated
		return clientValue{kind: vString, text: s}
	case '[':
		v := clientValue{kind: vList}
		for _, item := range n.items {
			v.list = append(v.list, d.valueOf(item))
		}
		return v
	case '{':
		v := clientValue{kind: vObject}
		for _, m := range n.members {
			if i := slices.Index(v.keys, m.key); i >= 0 { // the last wins, as in JSON.parse
				v.vals[i] = d.valueOf(m.val)
				continue
			}
			v.keys = append(v.keys, m.key)
			v.vals = append(v.vals, d.valueOf(m.val))
		}
		return v
	}
	switch text := string(raw); text {
	case "null":
		return clientValue{kind: vNull}
	case "true", "false":
		return clientValue{kind: vBool, text: text}
	default:
		f, _ := strconv.ParseFloat(text, 64)
		return clientValue{kind: vNumber, text: text, num: f}
	}
}

// jscan reads valid JSON, recording offsets.
type jscan struct {
	data []byte
	i    int
}

func (s *jscan) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) scan(depth int) (*jnode, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	s.ws()
	if s.i >= len(s.data) {
		return nil, errors.New("unexpected end of the file")
	}
	n := &jnode{start: s.i}
	switch c := s.data[s.i]; c {
	case '{':
		n.kind = '{'
		s.i++
		for {
			s.ws()
			if s.data[s.i] == '}' {
				s.i++
				break
			}
			if s.data[s.i] == ',' {
				s.i++
				continue
			}
			m := jmember{keyStart: s.i}
			s.str()
			m.keyEnd = s.i
			_ = json.Unmarshal(s.data[m.keyStart:m.keyEnd], &m.key)
			s.ws()
			s.i++ // :
			v, err := s.scan(depth + 1)
			if err != nil {
				return nil, err
			}
			m.val = v
			n.members = append(n.members, m)
		}
	case '[':
		n.kind = '['
		s.i++
		for {
			s.ws()
			if s.data[s.i] == ']' {
				s.i++
				break
			}
			if s.data[s.i] == ',' {
				s.i++
				continue
			}
			v, err := s.scan(depth + 1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
	case '"':
		n.kind = '"'
		s.str()
	default:
		n.kind = 'v'
		for s.i < len(s.data) && !strings.ContainsRune(",]} \t\r\n", rune(s.data[s.i])) {
			s.i++
		}
	}
	n.end = s.i
	return n, nil
}

// str skips a string.
func (s *jscan) str() {
	for s.i++; s.i < len(s.data) && s.data[s.i] != '"'; s.i++ {
		if s.data[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}

// lineCol returns the 1-based line and column of offset off.
func jsonLineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := bytes.Count(data[:off], []byte("\n")) + 1
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

// Files.

// writeBackup writes the backup, refusing to replace one unless force.
func writeBackup(path string, data []byte, perm fs.FileMode, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	return nil
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, so that a reader never sees half of it; a symbolic link
// stays a link to the file it names. mkdir creates the directory.
func writeFileAtomic(path string, data []byte, perm fs.FileMode, mkdir bool) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	dir := filepath.Dir(path)
	if mkdir {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".preflight-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

func configOrNull(path string, exists bool) string {
	if exists {
		return path
	}
	return "/dev/null"
}

// Unified diffs.

// unifiedDiff returns the changes from a to b as a unified diff with three
// lines of context; "" when they are equal.
func unifiedDiff(aName, bName string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	al, bl := splitDiffLines(a), splitDiffLines(b)
	ops := diffScript(al, bl)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	const context = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from context lines before this change to context lines
		// after the last change closer than 2*context to the one before.
		start := max(i-context, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		stop := min(end+context+1, len(ops))
		var an, bn int
		for _, o := range ops[start:stop] {
			if o.kind != '+' {
				an++
			}
			if o.kind != '-' {
				bn++
			}
		}
		as, bs := ops[start].a+1, ops[start].b+1
		if an == 0 {
			as--
		}
		if bn == 0 {
			bs--
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(as, an), hunkRange(bs, bn))
		for _, o := range ops[start:stop] {
			line := ""
			switch o.kind {
			case '+':
				line = bl[o.b]
			default:
				line = al[o.a]
			}
			out.WriteByte(o.kind)
			if strings.HasSuffix(line, "\n") {
				out.WriteString(line)
			} else {
				out.WriteString(line + "\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// diffLines splits data into lines, each with its newline (the last may
// have none).
func splitDiffLines(data []byte) []string {
	var lines []string
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, string(data))
			break
		}
		lines = append(lines, string(data[:i+1]))
		data = data[i+1:]
	}
	return lines
}

// diffOp is one line of a diff: ' ' in both, '-' only in a, '+' only in b;
// a and b are its indexes in a and b (where it would be, for the other).
type diffOp struct {
	kind byte
	a, b int
}

// maxDiffCells bounds the table of the longest common subsequence; past it
// the changed middle is shown as removed and added whole.
const maxDiffCells = 4 << 20

// diffOps is the edit script from a to b: the common lines at both ends,
// and a longest common subsequence of the middle.
func diffScript(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', i, i})
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	n, m := len(am), len(bm)
	if (n+1)*(m+1) <= maxDiffCells {
		// lcs[i][j]: the longest common subsequence of am[i:] and bm[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if am[i] == bm[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && am[i] == bm[j]:
				ops = append(ops, diffOp{' ', pre + i, pre + j})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', pre + i, pre + j})
				i++
			default:
				ops = append(ops, diffOp{'+', pre + i, pre + j})
				j++
			}
		}
	} else {
		for i := 0; i < n; i++ {
			ops = append(ops, diffOp{'-', pre + i, pre})
		}
		for j := 0; j < m; j++ {
			ops = append(ops, diffOp{'+', pre + n, pre + j})
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, diffOp{' ', len(a) - suf + k, len(b) - suf + k})
	}
	return ops
}

// sortedNames returns the keys of m, sorted.
func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
