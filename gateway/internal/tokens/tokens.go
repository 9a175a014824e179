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
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"strconv"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
)

// Encoding is the name of the encoding [O200k] counts in: the one of
// GPT-4o, GPT-4.1, o-series and GPT-5 models.
const Encoding = "o200k_base"

// Counter counts the tokens of text in one encoding. It is safe for
// concurrent use.
type Counter struct {
	enc *tiktoken.Tiktoken
}

// o200kRanks is OpenAI's o200k_base.tiktoken, gzipped (o200k/LICENSE says
// where it comes from; the tests check its SHA-256 against the hash
// OpenAI's tiktoken pins).
//
//go:embed o200k/o200k_base.tiktoken.gz
var o200kRanks []byte

// o200k loads the encoding once per process, from the embedded ranks:
// tiktoken-go's default loader would download them. SetBpeLoader sets a
// package variable of tiktoken-go; it is set here, once, before the only
// GetEncoding call, so the download path is never taken.
var o200k = sync.OnceValues(func() (*Counter, error) {
	tiktoken.SetBpeLoader(embeddedLoader{})
	enc, err := tiktoken.GetEncoding(Encoding)
	if err != nil {
		return nil, err
	}
	return &Counter{enc: enc}, nil
})

// embeddedLoader is a tiktoken.BpeLoader that has o200k_base only.
type embeddedLoader struct{}

// LoadTiktokenBpe returns the ranks of the file the URL names, which must be
// o200k_base.tiktoken.
func (embeddedLoader) LoadTiktokenBpe(url string) (map[string]int, error) {
	if name := path.Base(url); name != Encoding+".tiktoken" {
		return nil, fmt.Errorf("tokens: only %s is embedded, not %s", Encoding, name)
	}
	zr, err := gzip.NewReader(bytes.NewReader(o200kRanks))
	if err != nil {
		return nil, fmt.Errorf("tokens: embedded ranks: %w", err)
	}
	return parseRanks(zr)
}

// parseRanks reads a .tiktoken file: one "base64-token rank" per line.
func parseRanks(r io.Reader) (map[string]int, error) {
	ranks := make(map[string]int, 200_000)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		tok, rank, ok := bytes.Cut(line, []byte{' '})
		if !ok {
			return nil, fmt.Errorf("tokens: ranks line %d: no rank", n)
		}
		b, err := base64.StdEncoding.AppendDecode(nil, tok)
		if err != nil {
			return nil, fmt.Errorf("tokens: ranks line %d: %w", n, err)
		}
		v, err := strconv.Atoi(string(rank))
		if err != nil {
			return nil, fmt.Errorf("tokens: ranks line %d: %w", n, err)
		}
		ranks[string(b)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens: embedded ranks: %w", err)
	}
	return ranks, nil
}

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
