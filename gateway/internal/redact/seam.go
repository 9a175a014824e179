package redact

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// seamWidth is how far on each side of the seam between two adjacent
// text blocks the detectors read, for a value split across them: a client
// shows adjacent text blocks as one text.
const seamWidth = 512

// cut is a span of a text block to take out: label replaces it ("" in
// every block but the one where the value starts).
type cut struct {
	start, end int
	label      string
}

// seamPart is the piece of a block a seam's text holds, from at in it.
type seamPart struct {
	block   *mcp.TextContent
	at, off int // where it starts in the seam's text, and in the block's
	n       int
}

// seams finds the values that run across the seam between adjacent text
// blocks of blocks, and returns the spans of the blocks to cut; false
// when the budget ran out. The whole of each value is added to values, so
// that it is redacted wherever else it occurs.
func (r *Redactor) seams(blocks []mcp.Content, values map[string]string, budget *int) (map[*mcp.TextContent][]cut, bool) {
	var cuts map[*mcp.TextContent][]cut
	for k := 1; k < len(blocks); k++ {
		left, lok := blocks[k-1].(*mcp.TextContent)
		right, rok := blocks[k].(*mcp.TextContent)
		if !lok || !rok || left.Text == "" || right.Text == "" {
			continue
		}
		text, parts, seam := seamText(blocks, k)
		ok := r.scanAll(text, budget, func(kind string, s, e int) {
			if s >= seam || e <= seam {
				return // within one block: found there
			}
			addValue(values, text[s:e], kind)
			label := placeholder(kind)
			for _, p := range parts {
				from, to := max(s, p.at), min(e, p.at+p.n)
				if from >= to {
					continue
				}
				if cuts == nil {
					cuts = map[*mcp.TextContent][]cut{}
				}
				c := cut{from - p.at + p.off, to - p.at + p.off, ""}
				if from == s {
					c.label = label
				}
				cuts[p.block] = append(cuts[p.block], c)
			}
		})
		if !ok {
			return nil, false
		}
	}
	return cuts, true
}

// seamText returns the text around the seam before blocks[k]: up to
// seamWidth bytes of the adjacent text blocks on each side, the parts it
// is made of, and where the seam is in it.
func seamText(blocks []mcp.Content, k int) (string, []seamPart, int) {
	var before []seamPart
	need := seamWidth
	for i := k - 1; i >= 0 && need > 0; i-- {
		b, ok := blocks[i].(*mcp.TextContent)
		if !ok {
			break
		}
		n := min(need, len(b.Text))
		before = append(before, seamPart{block: b, off: len(b.Text) - n, n: n})
		need -= n
	}
	slices.Reverse(before)
	var sb strings.Builder
	parts := before
	for i := range parts {
		parts[i].at = sb.Len()
		sb.WriteString(parts[i].block.Text[parts[i].off:])
	}
	seam := sb.Len()
	need = seamWidth
	for i := k; i < len(blocks) && need > 0; i++ {
		b, ok := blocks[i].(*mcp.TextContent)
		if !ok {
			break
		}
		n := min(need, len(b.Text))
		parts = append(parts, seamPart{block: b, at: sb.Len(), n: n})
		sb.WriteString(b.Text[:n])
		need -= n
	}
	return sb.String(), parts, seam
}

// applyCuts returns res with the cuts made in its text blocks (a copy;
// res itself when there are none).
func applyCuts(res *mcp.CallToolResult, cuts map[*mcp.TextContent][]cut) *mcp.CallToolResult {
	if len(cuts) == 0 {
		return res
	}
	out := *res
	out.Content = slices.Clone(res.Content)
	for i, b := range out.Content {
		t, ok := b.(*mcp.TextContent)
		if !ok || cuts[t] == nil {
			continue
		}
		c := *t
		c.Text = cutText(t.Text, cuts[t])
		out.Content[i] = &c
	}
	return &out
}

// cutText takes the cuts out of s, merging those that overlap.
func cutText(s string, cuts []cut) string {
	slices.SortFunc(cuts, func(a, b cut) int { return a.start - b.start })
	var b strings.Builder
	pos := 0
	for i := 0; i < len(cuts); {
		c := cuts[i]
		for i++; i < len(cuts) && cuts[i].start < c.end; i++ {
			c.end = max(c.end, cuts[i].end)
			if c.label == "" {
				c.label = cuts[i].label
			}
		}
		if c.start < pos {
			c.start = pos
		}
		b.WriteString(s[pos:c.start])
		b.WriteString(c.label)
		pos = max(pos, c.end)
	}
	b.WriteString(s[pos:])
	return b.String()
}
