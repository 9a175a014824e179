// Reads a JSON array of strings on stdin and writes, for each of two
// independent o200k_base implementations, the token count of every string:
// {"tiktoken": [...], "gptTokenizer": [...]}.
//
// tiktoken is OpenAI's tiktoken Rust core built to WebAssembly, with the
// ranks inside the package; gpt-tokenizer is a separate implementation in
// plain JavaScript, with its own copy of the ranks. Both encode special-token
// text as ordinary text, as package tokens does.
"use strict";
const { get_encoding } = require("tiktoken");
const gpt = require("gpt-tokenizer/encoding/o200k_base");

const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const enc = get_encoding("o200k_base");
const out = { tiktoken: [], gptTokenizer: [] };
for (const s of input) {
  out.tiktoken.push(enc.encode_ordinary(s).length);
  out.gptTokenizer.push(gpt.encode(s, { disallowedSpecial: new Set() }).length);
}
enc.free();
process.stdout.write(JSON.stringify(out));
