package config

import (
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Marshal writes c in the canonical format, YAML, with every default
// written out; [Parse] reads it back to an equal Config (BearerToken
// aside, which it reads again from the environment). An editor's file
// read by [Load] and written by Marshal is the canonical file to start
// from.
func Marshal(c *Config) ([]byte, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Load(data, &doc); err != nil {
		return nil, err
	}
	blockStyle(&doc, false)
	return yaml.Dump(&doc, yaml.WithIndent(2), yaml.WithLineWidth(-1))
}

// blockStyle drops the flow style JSON gave every node, so the emitter
// writes block YAML and quotes only what needs it, and writes ${ in
// values as $${, which Parse reads back as ${.
func blockStyle(n *yaml.Node, key bool) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && !key && n.ShortTag() == "!!str" {
		n.Value = strings.ReplaceAll(n.Value, "${", "$${")
	}
	for i, c := range n.Content {
		blockStyle(c, n.Kind == yaml.MappingNode && i%2 == 0)
	}
}
