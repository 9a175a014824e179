package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/preflightmcp/preflight/gateway/internal/rules/pack"
)

// TestPackSchemaNames: the configuration schema offers exactly the packs
// shipped.
func TestPackSchemaNames(t *testing.T) {
	t.Parallel()
	var schema struct {
		Defs map[string]struct {
			Properties map[string]struct {
				AnyOf []struct {
					Enum []string `json:"enum"`
				} `json:"anyOf"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	data, err := os.ReadFile(filepath.Join("config", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	p := schema.Defs["server"].Properties["pack"]
	if len(p.AnyOf) != 2 || !slices.Equal(p.AnyOf[1].Enum, pack.Names()) {
		t.Errorf("schema's packs %+v, shipped %v", p.AnyOf, pack.Names())
	}
}
