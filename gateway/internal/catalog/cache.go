package catalog

// Cache scopes of list and read results (2026-07-28).
const (
	ScopePublic  = "public"
	ScopePrivate = "private"
)

// Cache is the cache-control of a list: ttlMs and cacheScope.
type Cache struct {
	// Listed reports whether the upstream has this list at all (it
	// declared the capability and answered); Merge ignores parts that
	// were not listed.
	Listed bool
	// TTLMs is how long a client may cache the list, in milliseconds; 0
	// means not at all.
	TTLMs int
	// Scope is ScopePublic or ScopePrivate; empty means what the upstream
	// sent said nothing (a legacy upstream), which Merge treats as private
	// with no time to live.
	Scope string
}

// Merge derives the cache-control of an aggregated list from its parts: the
// time to live is the smallest non-zero one, and the scope is private if
// any part is private, has no time to live or says nothing. An aggregated
// list is never more public than its strictest part, and a part that may
// not be cached at all makes it private to one client (the rule Kuadrant's
// gateway uses). Parts that were not listed are ignored; none at all give
// {0, private}.
func Merge(parts ...Cache) Cache {
	out := Cache{Listed: true, Scope: ScopePublic}
	n := 0
	for _, c := range parts {
		if !c.Listed {
			continue
		}
		n++
		if c.TTLMs > 0 && (out.TTLMs == 0 || c.TTLMs < out.TTLMs) {
			out.TTLMs = c.TTLMs
		}
		if c.Scope != ScopePublic || c.TTLMs <= 0 {
			out.Scope = ScopePrivate
		}
	}
	if n == 0 {
		return Cache{Listed: true, Scope: ScopePrivate}
	}
	return out
}
