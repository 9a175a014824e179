// Package requeststate seals the requestState of MCP multi round-trip
// requests (MCP 2026-07-28), so that a server can keep its state in the
// client without trusting the client.
//
// # What it protects against
//
// A server answers tools/call, prompts/get or resources/read with
// resultType "input_required", inputRequests and an opaque requestState;
// the client retries the same request with inputResponses and echoes the
// requestState byte for byte. Whatever the client sends back is
// attacker-controlled input. Sealing the state with a [Ring] guarantees
// that a state the server accepts is one it issued, unmodified, recently,
// and for this very request:
//
//   - forgery and tampering: the state is encrypted and authenticated with
//     AES-256-GCM; changing, truncating or extending any byte of a token
//     makes it fail, and the client cannot read the payload either;
//   - replay into another request: the state is bound to the method, the
//     target (tool name, prompt name or resource URI), a digest of the
//     arguments, an audience (the server's name, so servers sharing keys
//     cannot accept each other's state) and the authenticated principal
//     when there is one (so one user cannot use another user's state);
//   - stale state: the state carries its issue time and expiry (10 minutes
//     by default, with 30 seconds of clock skew allowed between replicas);
//   - oracles: every failure answers the same JSON-RPC error, -32602
//     "Invalid or expired requestState" ([WireError]), while [Ring.Open]
//     returns an [Error] whose [Reason] says what really went wrong, for
//     the server log.
//
// Within its lifetime a token can be presented again for the same request
// by the same principal: sealing is stateless and does not detect replay of
// an identical retry. Keep in the payload only what may be reused that way
// (answers the client itself gave), and re-seal on every round: [Ring.Seal]
// draws a fresh random nonce and fresh times each time.
//
// # How
//
// Each [Key] of a ring has an ID and a secret of at least 32 bytes; the
// AES-256 key is derived from the secret by HKDF-SHA256 with the key ID in
// the info string. The first key of a ring seals, every key opens, so keys
// rotate without downtime: deploy [new, old] everywhere, then [new] after
// one TTL. [NewRandomRing] (and a nil *Ring, which uses [Default]) holds a
// random key that lives as long as the process, which suits a single
// process; replicas share keys from configuration with [ParseKeys] or
// [RingFromEnv]:
//
//	PREFLIGHT_REQUEST_STATE_KEYS="k2:$(openssl rand -base64 32),k1:<old secret>"
//
// A token is a base64url string without padding (RFC 4648 §5) of these
// bytes; the header (its first 2+n bytes) is the GCM additional data:
//
//	offset    size  field
//	0         1     version, 0x01 (TokenVersion)
//	1         1     n, the length of the key ID, 1 to 64 (MaxKeyIDLen)
//	2         n     key ID, ASCII letters, digits, '.', '_' or '-'
//	2+n       12    GCM nonce, random for every seal
//	14+n      c     AES-256-GCM ciphertext of the claims below
//	14+n+c    16    GCM authentication tag
//
// The claims (the plaintext) are, in order:
//
//	varint           issue time, Unix milliseconds (encoding/binary Varint)
//	uvarint          lifetime in milliseconds; expiry = issue time + lifetime
//	1 byte           method: 1 tools/call, 2 prompts/get, 3 resources/read
//	uvarint + bytes  target
//	uvarint + bytes  arguments digest (see ArgumentsDigest)
//	uvarint + bytes  audience
//	uvarint + bytes  principal ("" when unauthenticated)
//	rest             payload, the caller's own bytes
//
// Binding fields are compared after decryption, so a mismatch can be
// reported precisely. The overhead is 30+n bytes of header, nonce and tag
// plus about 60 bytes of claims (more for long names), times 4/3 for
// base64: with key ID "k1", tool "delete_folder", audience "folders" and
// principal "alice", a 21-byte payload gives a 180-character token and
// 1054 bytes (five recorded elicitation answers) 1558 characters.
//
// Nonces are random (96 bits), so a key should seal fewer than 2^32
// tokens; rotate long before that.
//
// # Use
//
// Hand-written input_required flows on tools, prompts and resources use
// [Ring.SealRequest] and [Ring.OpenRequest], which build the [Binding] from
// the SDK request with [BindingFor]:
//
//	state, err := ring.OpenRequest(req, "my-server")
//	if err != nil {
//		logger.Warn("requestState refused", "reason", requeststate.ReasonOf(err), "err", err)
//		return nil, nil, requeststate.WireError(err)
//	}
//	if state == nil {
//		// First round: ask, and seal what must come back.
//		token, err := ring.SealRequest(req, "my-server", payload)
//		...
//	}
//
// The arguments digest is SHA-256 over a canonical JSON encoding (see
// [ArgumentsDigest]): objects whose members come in another order have the
// same digest, and so do numbers of equal value (1, 1.0, 1e0), whether they
// were decoded as float64 or json.Number. inputResponses and requestState
// are not part of it.
package requeststate
