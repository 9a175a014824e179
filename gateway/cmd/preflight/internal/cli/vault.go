package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/preflightmcp/preflight/gateway/config"
	"github.com/preflightmcp/preflight/gateway/internal/setup"
)

type vaultCmd struct {
	common
	config string
}

func (c *vaultCmd) synopsis() string {
	return `usage: preflight vault [-config FILE] [-json] rekey

Looks after the vault, where the gateway keeps the tokens of the servers it
signs in to with OAuth (auth: oauth), sealed with AES-256-GCM under the keys
of the vault section: the first key seals, every key opens.

  rekey   seal again, under the first key, every token sealed by another,
          and print how many were. To rotate the keys: put a new key first
          (vault.keysEnv or vault.keysFile) and restart the gateway (or its
          replicas, one by one); run rekey; then drop the old key.

-config FILE names the vault as preflight serve -config FILE does; without
it, it is the default of a configuration without a vault section: vault.db,
and its key vault.key, in the user's state directory.

Exit status: 0 done; 2 usage error; 3 the vault could not be opened, or a
token could not be opened with any key given.

Example:

  PREFLIGHT_VAULT_KEYS=k2:...,k1:... preflight vault -config gateway.yaml rekey
`
}

func (c *vaultCmd) flags(fs *flag.FlagSet) {
	c.bindOutput(fs, []string{"text", "json"}, "json")
	c.bindTimeout(fs)
	fs.StringVar(&c.config, "config", "", "the gateway's configuration `FILE`, whose vault section names the vault and its keys")
}

func (c *vaultCmd) run(ctx context.Context, env *env, inv invocation) error {
	switch {
	case inv.dashDash:
		return usagef("vault takes no command after --")
	case len(inv.args) == 0:
		return usagef("missing subcommand: rekey")
	case inv.args[0] != "rekey":
		return usagef("unknown subcommand %q: want rekey", inv.args[0])
	case len(inv.args) > 1:
		return usagef("rekey takes no arguments")
	}
	var vc config.Vault
	if c.config != "" {
		cfg, err := config.Load(c.config)
		if err != nil {
			return couldNotRun(err)
		}
		vc = cfg.Vault
	}
	v, err := setup.OpenVault(ctx, vc)
	if err != nil {
		return couldNotRun(err)
	}
	defer v.Close()
	n, err := v.Rekey(ctx)
	if err != nil {
		return couldNotRun(fmt.Errorf("after sealing %d again: %w", n, err))
	}
	if c.format == "json" {
		return json.NewEncoder(env.stdout).Encode(struct {
			Resealed   int    `json:"resealed"`
			SealingKey string `json:"sealingKey"`
		}{n, v.SealingKey()})
	}
	_, err = fmt.Fprintf(env.stdout, "%d sealed again under key %s\n", n, v.SealingKey())
	return err
}
