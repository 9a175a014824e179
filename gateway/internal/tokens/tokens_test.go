package tokens

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

func counter(t testing.TB) *Counter {
	t.Helper()
	c, err := O200k()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// o200kVectors are token ids computed by OpenAI's tiktoken (its Rust core,
// as built to WebAssembly in the npm package tiktoken@1.0.22, which the
// cross-check test installs; encode_ordinary) for strings that exercise
// each branch of o200k's split pattern: contractions in both cases, digit
// runs, whitespace runs before text, at the end and between line breaks
// (where github.com/tiktoken-go/tokenizer v0.10.0 differs), U+0085 (white space
// to the reference, not to JavaScript's \s), title-case letters, combining
// marks, scripts without spaces, emoji with a joiner, and text that spells
// a special token.
var o200kVectors = []struct {
	text string
	ids  []int
}{
	{"hello world", []int{24912, 2375}},
	{"Hello, world!", []int{13225, 11, 2375, 0}},
	{"", []int{}},
	{"today\n \n", []int{58744, 47812}},
	{"a\n \nb", []int{64, 47812, 65}},
	{"line\n  \n  next", []int{1137, 31835, 220, 2613}},
	{"I'm here, they're not; we'll see.", []int{15390, 2105, 11, 18940, 625, 26, 22782, 1921, 13}},
	{"DON'T SHOUT", []int{134882, 51532, 10902, 5858}},
	{"1234567890", []int{7633, 19354, 29338, 15}},
	{"👍", []int{82514}},
	{"👩\u200d💻", []int{28823, 102, 2524, 31446, 119}},
	{"获取当前日期", []int{49424, 41764, 38332}},
	{"naïve café — “quotes”", []int{1503, 9954, 737, 30469, 2733, 966, 136724, 693}},
	{"<|endoftext|>", []int{27, 91, 419, 1440, 919, 91, 29}},
	{strings.Repeat("x", 100), []int{92984, 92984, 92984, 92984, 92984, 92984, 92984, 92984, 92984, 92984, 92984, 92984, 30950}},
	{"مرحبا بالعالم", []int{158894, 26537, 101462, 12773}},
	{"こんにちは世界", []int{95839, 28428}},
	{"\u00a0nbsp\u3000ideo", []int{5310, 9431, 1397, 2451}},
	{"  indented\n\tline\r\n", []int{220, 1383, 23537, 198, 57584, 370}},
	{" \u00850", []int{220, 126, 227, 15}},
	{"a/b/c\n/path", []int{64, 7611, 4308, 198, 119244}},
	{"e\u0301te\u0301", []int{68, 13430, 411, 13430}},
	{"ǅungla ǅUNGLA", []int{131, 227, 988, 1675, 220, 131, 227, 2926, 7833, 32}},
	{`{"type":"object","properties":{"path":{"type":"string","description":"File path"}},"required":["path"]}`,
		[]int{10848, 2493, 7534, 3369, 4294, 35913, 70649, 4189, 70649, 2493, 7534, 1655, 4294, 9186, 7534, 2279, 3104, 57612, 3532, 12919, 95067, 4189, 2601, 92}},
	{"Read, append, replace, or delete file contents", []int{4455, 11, 17147, 11, 13284, 11, 503, 6168, 1974, 15825}},
}

func TestO200kVectors(t *testing.T) {
	t.Parallel()
	c := counter(t)
	for _, v := range o200kVectors {
		got := c.Encode(v.text)
		if len(got) == 0 && len(v.ids) == 0 {
			continue
		}
		if !slices.Equal(got, v.ids) {
			t.Errorf("Encode(%q) = %v, want %v", v.text, got, v.ids)
		}
		if n := c.Count(v.text); n != len(v.ids) {
			t.Errorf("Count(%q) = %d, want %d", v.text, n, len(v.ids))
		}
	}
}

// TestPublishedVectors checks the vectors of OpenAI's own tiktoken tests
// (tests/test_encoding.py: test_simple, test_simple_regex,
// test_basic_encode, test_encode_surrogate_pairs) in the encodings they
// are published for. tiktoken-go runs every encoding through the same
// split and merge code as o200k_base, so these check that code against
// figures OpenAI publishes, where the o200k vectors above were computed.
func TestPublishedVectors(t *testing.T) {
	t.Parallel()
	counter(t) // o200k_base, from the embedded ranks
	// The other encodings come from the loader that embeds all four,
	// which only the tests use.
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	t.Cleanup(func() { tiktoken.SetBpeLoader(embeddedLoader{}) })
	for _, tc := range []struct {
		encoding, text string
		ids            []int
	}{
		{"r50k_base", "hello world", []int{31373, 995}},
		{"p50k_base", "hello world", []int{31373, 995}},
		{"cl100k_base", "hello world", []int{15339, 1917}},
		{"cl100k_base", "rer", []int{38149}},
		{"cl100k_base", "'rer", []int{2351, 81}},
		{"cl100k_base", "today\n ", []int{31213, 198, 220}},
		{"cl100k_base", "today\n \n", []int{31213, 27907}},
		{"cl100k_base", "today\n  \n", []int{31213, 14211}},
		{"cl100k_base", " \x850", []int{220, 126, 227, 15}},
		{"cl100k_base", "👍", []int{9468, 239, 235}},
	} {
		enc, err := tiktoken.GetEncoding(tc.encoding)
		if err != nil {
			t.Fatal(err)
		}
		// " \x850" is the byte 0x85 in the Python test, which Python's
		// str holds as U+0085; Go spells that rune "\u0085".
		text := strings.ReplaceAll(tc.text, "\x85", "\u0085")
		if got := enc.EncodeOrdinary(text); !slices.Equal(got, tc.ids) {
			t.Errorf("%s: Encode(%q) = %v, want %v", tc.encoding, text, got, tc.ids)
		}
	}
}

// TestEmbeddedRanks checks that the ranks built into the binary are
// OpenAI's: the SHA-256 of o200k_base.tiktoken is the expected_hash that
// tiktoken (tiktoken_ext/openai_public.py) pins for that file.
func TestEmbeddedRanks(t *testing.T) {
	t.Parallel()
	zr, err := gzip.NewReader(bytes.NewReader(o200kRanks))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	const want = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("sha256(%s.tiktoken) = %s, want %s (OpenAI's pinned hash)", Encoding, got, want)
	}
	if n := strings.Count(string(b), "\n"); n != 199998 {
		t.Errorf("%d ranks, want 199998", n)
	}
}

// The embedded loader reads the ranks as github.com/pkoukk/tiktoken-go-loader
// does, and has no other encoding.
func TestEmbeddedLoader(t *testing.T) {
	t.Parallel()
	const url = "https://openaipublic.blob.core.windows.net/encodings/"
	got, err := embeddedLoader{}.LoadTiktokenBpe(url + Encoding + ".tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	want, err := loader.NewOfflineLoader().LoadTiktokenBpe(url + Encoding + ".tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 199998 || !maps.Equal(got, want) {
		t.Errorf("%d ranks, want the %d of tiktoken-go-loader, equal", len(got), len(want))
	}
	if _, err := (embeddedLoader{}).LoadTiktokenBpe(url + "cl100k_base.tiktoken"); err == nil {
		t.Error("the embedded loader loaded cl100k_base")
	}
	if _, err := parseRanks(strings.NewReader("aGk= 1\nbad\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a line without a rank: %v", err)
	}
}

func TestCountConcurrent(t *testing.T) {
	t.Parallel()
	c := counter(t)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				v := o200kVectors[(i+j)%len(o200kVectors)]
				if n := c.Count(v.text); n != len(v.ids) {
					errs <- fmt.Sprintf("Count(%q) = %d, want %d", v.text, n, len(v.ids))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestO200kOnce(t *testing.T) {
	t.Parallel()
	a, b := counter(t), counter(t)
	if a != b {
		t.Error("O200k returned two counters")
	}
}
