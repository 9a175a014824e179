package config_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/preflightmcp/preflight/gateway/config"
)

// A Claude Desktop file, read as it is: its servers become the gateway's,
// each with the defaults of the canonical format.
func ExampleParse() {
	desktop := []byte(`{
  "mcpServers": {
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "docs": {"url": "https://docs.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
  },
  "globalShortcut": "Ctrl+Space"
}`)
	env := func(name string) (string, bool) {
		if name == "DOCS_TOKEN" {
			return "t0ken", true
		}
		return "", false
	}
	c, err := config.Parse("claude_desktop_config.json", desktop, env)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range c.Names() {
		s := c.Servers[name]
		fmt.Printf("%s: %s, tools named %s%s..., connect %s, call timeout %v\n", name, s.Type, s.Prefix, s.Separator, s.Connect, s.Timeouts.Call)
	}
	fmt.Println(c.Servers["docs"].Headers["Authorization"])

	// A mistake names the file, the line and column, the key and what is
	// allowed.
	_, err = config.Parse("gateway.yaml", []byte("servers:\n  files:\n    command: npx\n    trust: maybe\n"), env)
	fmt.Println(err)
	// Output:
	// docs: http, tools named docs__..., connect eager, call timeout 5m
	// filesystem: stdio, tools named filesystem__..., connect eager, call timeout 5m
	// Bearer t0ken
	// gateway.yaml:4:12: servers.files.trust: "maybe" is not allowed (allowed: trusted, untrusted)
}

// Marshal writes a config in the canonical format, every default spelled
// out: the way to turn an editor's file into a gateway.yaml.
func ExampleMarshal() {
	c, err := config.Parse("mcp.json", []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := config.Marshal(c)
	os.Stdout.Write(out)
	// Output:
	// servers:
	//   memory:
	//     type: stdio
	//     command: npx
	//     args:
	//     - -y
	//     - '@modelcontextprotocol/server-memory'
	//     prefix: ''
	//     separator: __
	//     connect: eager
	//     timeouts:
	//       connect: 1m
	//       discover: 5s
	//       call: 5m
	//       shutdown: 5s
	//     trust: trusted
	//     pack: true
	//     pin: warn
	//     disclose: false
	//     decisions: enforce
	//     flow: on
	// disclosure:
	//   enabled: false
	//   store: memory
	//   ttl: 24h
	// pins:
	//   store: sqlite
	// vault:
	//   store: sqlite
	// audit:
	//   store: sqlite
	//   levels:
	//     read: summary
	//     write: full
	//     external: full
	//     delete: full
	//   onUnavailable: proceed
	// redaction:
	//   level: confidential
	//   withhold: restricted
	//   sensitive: confidential
	// decisions:
	//   mode: enforce
	// flow:
	//   action: confirm
	//   sensitivity: restricted
	//   ttl: 1h
	//   max: 4096
}

// How a command serves from a config file and follows it: the first
// config starts the gateway, each later one reconfigures it, and a bad
// edit (logged by Watch) changes nothing.
func ExampleWatch() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	err := config.Watch(ctx, "gateway.yaml", &config.WatchOptions{Reload: hup, Logger: log}, func(c *config.Config, err error) {
		if err != nil {
			return // the running config stays in force
		}
		fmt.Println("serving", c.Names()) // start, or reconfigure, the gateway
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // the first load failed: nothing to serve
		os.Exit(1)
	}
}
