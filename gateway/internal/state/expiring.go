package state

import "container/heap"

// expiring is a bounded map from keys to expiry times (microseconds on
// the store's clock), with a min-heap by expiry so that expired entries
// are removed in O(log n) each and a full map is detected in O(1). It is
// not safe for concurrent use.
type expiring struct {
	max   int
	index map[string]*entry
	h     entryHeap
}

type entry struct {
	key string
	exp int64
	i   int // position in the heap
}

func newExpiring(max int) *expiring {
	return &expiring{max: max, index: make(map[string]*entry)}
}

// sweep removes the entries that expired at or before now.
func (e *expiring) sweep(now int64) {
	for len(e.h) > 0 && e.h[0].exp <= now {
		it := heap.Pop(&e.h).(*entry)
		delete(e.index, it.key)
	}
}

// get returns key's expiry, if it has not been swept.
func (e *expiring) get(key string) (int64, bool) {
	it, ok := e.index[key]
	if !ok {
		return 0, false
	}
	return it.exp, true
}

// set sets key's expiry. It returns false, changing nothing, when key is
// new and the map holds max entries.
func (e *expiring) set(key string, exp int64) bool {
	if it, ok := e.index[key]; ok {
		it.exp = exp
		heap.Fix(&e.h, it.i)
		return true
	}
	if len(e.index) >= e.max {
		return false
	}
	it := &entry{key: key, exp: exp}
	e.index[key] = it
	heap.Push(&e.h, it)
	return true
}

type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].exp < h[j].exp }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i = i
	h[j].i = j
}
func (h *entryHeap) Push(x any) {
	it := x.(*entry)
	it.i = len(*h)
	*h = append(*h, it)
}
func (h *entryHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
