package redact

import "fmt"

// keywordMatcher finds every occurrence of a set of lower-case keywords in
// a text, ASCII case-insensitively, overlapping ones included: an
// Aho-Corasick automaton compiled to a dense table over byte classes, one
// lookup per byte of text.
type keywordMatcher struct {
	class   [256]uint8 // byte -> class; ASCII upper case as lower case
	classes int
	next    []uint16  // state*classes + class -> state
	out     [][]int32 // state -> keywords ending here
	lens    []int     // keyword -> length
	// States from firstOut on, and only they, end keywords: the walk
	// tests one number per byte.
	firstOut int
}

func newKeywordMatcher(keywords []string) (*keywordMatcher, error) {
	m := &keywordMatcher{classes: 1} // class 0: bytes in no keyword
	for _, k := range keywords {
		for i := 0; i < len(k); i++ {
			b := k[i]
			if 'A' <= b && b <= 'Z' {
				return nil, fmt.Errorf("redact: keyword %q is not lower case", k)
			}
			if m.class[b] == 0 {
				if m.classes == 256 {
					return nil, fmt.Errorf("redact: too many distinct bytes in keywords")
				}
				m.class[b] = uint8(m.classes)
				m.classes++
			}
		}
		m.lens = append(m.lens, len(k))
	}
	for b := 'A'; b <= 'Z'; b++ {
		m.class[b] = m.class[b+'a'-'A']
	}

	// The trie, with -1 for a missing edge.
	goTo := [][]int32{make([]int32, m.classes)}
	for i := range goTo[0] {
		goTo[0][i] = -1
	}
	m.out = [][]int32{nil}
	for ki, k := range keywords {
		s := int32(0)
		for i := 0; i < len(k); i++ {
			c := m.class[k[i]]
			if goTo[s][c] < 0 {
				row := make([]int32, m.classes)
				for j := range row {
					row[j] = -1
				}
				goTo = append(goTo, row)
				m.out = append(m.out, nil)
				goTo[s][c] = int32(len(goTo) - 1)
			}
			s = goTo[s][c]
		}
		m.out[s] = append(m.out[s], int32(ki))
	}
	if len(goTo) > 1<<16 {
		return nil, fmt.Errorf("redact: %d keyword states, more than the table holds", len(goTo))
	}

	// Breadth first: failure links, then the full transition table.
	fail := make([]int32, len(goTo))
	m.next = make([]uint16, len(goTo)*m.classes)
	queue := []int32{}
	for c := 0; c < m.classes; c++ {
		if s := goTo[0][c]; s >= 0 {
			fail[s] = 0
			queue = append(queue, s)
			m.next[c] = uint16(s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		m.out[s] = append(m.out[s], m.out[fail[s]]...)
		for c := 0; c < m.classes; c++ {
			if t := goTo[s][c]; t >= 0 {
				fail[t] = int32(m.next[int(fail[s])*m.classes+c])
				queue = append(queue, t)
				m.next[int(s)*m.classes+c] = uint16(t)
			} else {
				m.next[int(s)*m.classes+c] = m.next[int(fail[s])*m.classes+c]
			}
		}
	}

	// Number the states that end keywords last.
	n := len(goTo)
	order := make([]int, 0, n) // new -> old
	for s := 0; s < n; s++ {
		if len(m.out[s]) == 0 {
			order = append(order, s)
		}
	}
	m.firstOut = len(order)
	for s := 0; s < n; s++ {
		if len(m.out[s]) > 0 {
			order = append(order, s)
		}
	}
	if order[0] != 0 {
		return nil, fmt.Errorf("redact: an empty keyword")
	}
	renum := make([]uint16, n) // old -> new
	for nw, old := range order {
		renum[old] = uint16(nw)
	}
	next := make([]uint16, len(m.next))
	out := make([][]int32, n)
	for nw, old := range order {
		for c := 0; c < m.classes; c++ {
			next[nw*m.classes+c] = renum[m.next[old*m.classes+c]]
		}
		out[nw] = m.out[old]
	}
	m.next, m.out = next, out
	return m, nil
}

// walk calls fn with the start and the keyword of every occurrence in t,
// in order of their ends, and reports whether t is ASCII.
func (m *keywordMatcher) walk(t string, fn func(start, keyword int)) (ascii bool) {
	var high byte
	next, class, classes, firstOut := m.next, &m.class, m.classes, m.firstOut
	s := 0
	for i := 0; i < len(t); i++ {
		b := t[i]
		high |= b
		s = int(next[s*classes+int(class[b])])
		if s >= firstOut {
			for _, k := range m.out[s] {
				fn(i+1-m.lens[k], int(k))
			}
		}
	}
	return high < 0x80
}

// found reports whether t holds a keyword.
func (m *keywordMatcher) found(t string) bool {
	s := 0
	for i := 0; i < len(t); i++ {
		if s = int(m.next[s*m.classes+int(m.class[t[i]])]); s >= m.firstOut {
			return true
		}
	}
	return false
}
