// Package tokens counts the tokens a model reads for an MCP tool catalog:
// the tools/list listing as a server serves it today, the minimal listing
// of progressive disclosure (seed 004), and what fetching the full
// descriptions of the tools a task needs costs on top.
//
// Counts are in OpenAI's o200k_base encoding ([O200k]), computed offline:
// the ranks are embedded in the binary and nothing is fetched at run time.
// A tool is counted as the compact JSON of what a model is shown of it
// ([Visible]: name, title, description, inputSchema, annotations), not as
// the whole wire object (icons, _meta, outputSchema and execution are left
// out). [Measure] compares the two listings and prices k-tool tasks;
// [CheckDescription] says whether a short description still says what its
// tool does.
package tokens

import (
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding is the name of the encoding [O200k] counts in: the one of
// GPT-4o, GPT-4.1, o-series and GPT-5 models.
const Encoding = "o200k_base"

// Counter counts the tokens of text in one encoding. It is safe for
// concurrent use.
type Counter struct {
	enc *tiktoken.Tiktoken
}

// o200k loads the encoding once per process. The ranks come from
// github.com/pkoukk/tiktoken-go-loader, which embeds OpenAI's
// o200k_base.tiktoken (its SHA-256 is checked by the tests against the
// hash OpenAI's tiktoken pins); tiktoken-go's default loader would
// download them. SetBpeLoader sets a package variable of tiktoken-go; it
// is set here, once, before the only GetEncoding call, so the download
// path is never taken.
var o200k = sync.OnceValues(func() (*Counter, error) {
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		return nil, err
	}
	return &Counter{enc: enc}, nil
})

// O200k returns the o200k_base counter. The first call decodes the
// embedded ranks (about half a second); later calls return the same
// counter.
func O200k() (*Counter, error) { return o200k() }

// Encode returns the token ids of text. Text that spells a special token
// such as "<|endoftext|>" is encoded as ordinary text, as it is when it
// appears in a tool description.
func (c *Counter) Encode(text string) []int {
	return c.enc.EncodeOrdinary(text)
}

// Count returns the number of tokens of text.
func (c *Counter) Count(text string) int {
	if text == "" {
		return 0
	}
	return len(c.enc.EncodeOrdinary(text))
}
