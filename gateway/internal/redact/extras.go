package redact

//lint:file-ignore SA1019 a result may still hold sampling's content blocks (deprecated by protocol 2026-07-28, SEP-2577), whose _meta is read and redacted like any other.

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The members of a result and its blocks that carry no content of their
// own but still the upstream's text: _meta and annotations.

// extras adds a block's _meta and annotations (and an embedded
// resource's _meta) to what is scanned.
func (c *collector) extras(b mcp.Content) {
	m, a := blockExtras(b)
	c.meta(m)
	if a != nil {
		c.structured(a)
	}
	if e, ok := b.(*mcp.EmbeddedResource); ok && e.Resource != nil {
		c.meta(e.Resource.Meta)
	}
}

func (c *collector) meta(m mcp.Meta) {
	if len(m) > 0 {
		c.structured(map[string]any(m))
	}
}

func blockExtras(b mcp.Content) (mcp.Meta, *mcp.Annotations) {
	switch b := b.(type) {
	case *mcp.TextContent:
		return b.Meta, b.Annotations
	case *mcp.ImageContent:
		return b.Meta, b.Annotations
	case *mcp.AudioContent:
		return b.Meta, b.Annotations
	case *mcp.ResourceLink:
		return b.Meta, b.Annotations
	case *mcp.EmbeddedResource:
		return b.Meta, b.Annotations
	}
	return contentMeta(b), nil
}

// rewriteMeta applies repl to a _meta; changed reports a difference.
func rewriteMeta(m mcp.Meta, repl *valueReplacer) (mcp.Meta, bool) {
	if len(m) == 0 {
		return m, false
	}
	v, changed := rewriteStructured(map[string]any(m), repl)
	out, ok := v.(map[string]any)
	if !changed || !ok {
		return m, false
	}
	return mcp.Meta(out), true
}

// rewriteAnnotations applies repl to annotations.
func rewriteAnnotations(a *mcp.Annotations, repl *valueReplacer) (*mcp.Annotations, bool) {
	if a == nil {
		return nil, false
	}
	v, changed := rewriteStructured(a, repl)
	if !changed {
		return a, false
	}
	b, err := json.Marshal(v)
	var out mcp.Annotations
	if err != nil || json.Unmarshal(b, &out) != nil {
		return &mcp.Annotations{}, true
	}
	return &out, true
}

// rewriteExtras returns a copy of b with repl applied to its _meta and
// annotations (and an embedded resource's _meta), nil when nothing
// changes.
func rewriteExtras(b mcp.Content, repl *valueReplacer) mcp.Content {
	m, a := blockExtras(b)
	nm, mch := rewriteMeta(m, repl)
	na, ach := rewriteAnnotations(a, repl)
	set := func(meta *mcp.Meta, ann **mcp.Annotations) { *meta, *ann = nm, na }
	switch b := b.(type) {
	case *mcp.TextContent:
		if mch || ach {
			return edited(b, func(c *mcp.TextContent) { set(&c.Meta, &c.Annotations) })
		}
	case *mcp.ImageContent:
		if mch || ach {
			return edited(b, func(c *mcp.ImageContent) { set(&c.Meta, &c.Annotations) })
		}
	case *mcp.AudioContent:
		if mch || ach {
			return edited(b, func(c *mcp.AudioContent) { set(&c.Meta, &c.Annotations) })
		}
	case *mcp.ResourceLink:
		if mch || ach {
			return edited(b, func(c *mcp.ResourceLink) { set(&c.Meta, &c.Annotations) })
		}
	case *mcp.EmbeddedResource:
		var rm mcp.Meta
		rch := false
		if b.Resource != nil {
			rm, rch = rewriteMeta(b.Resource.Meta, repl)
		}
		if mch || ach || rch {
			c := *b
			c.Meta, c.Annotations = nm, na
			if rch {
				rc := *b.Resource
				rc.Meta = rm
				c.Resource = &rc
			}
			return &c
		}
	case *mcp.ToolUseContent:
		if mch {
			return edited(b, func(c *mcp.ToolUseContent) { c.Meta = nm })
		}
	case *mcp.ToolResultContent:
		if mch {
			return edited(b, func(c *mcp.ToolResultContent) { c.Meta = nm })
		}
	}
	return nil
}

// edited returns a copy of *b that set changed.
func edited[T any](b *T, set func(*T)) *T {
	c := *b
	set(&c)
	return &c
}
