package catalog

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/preflightmcp/preflight/gateway/internal/text"
	"github.com/yosida95/uritemplate/v3"
)

// URIScheme begins every namespaced resource URI and template.
const URIScheme = "preflight:"

// NamespacedURI returns the form of an upstream's resource URI or URI
// template that names the upstream: "preflight:" + the upstream's name
// (path-escaped) + "/" + uri, as in preflight:files/file:///notes.md. The
// expansions of a namespaced template are the namespaced forms of the
// upstream template's expansions.
func NamespacedURI(upstream, uri string) string {
	return URIScheme + url.PathEscape(upstream) + "/" + uri
}

// ErrUnknownResource is returned for a URI no upstream serves.
var ErrUnknownResource = errors.New("unknown resource")

// AmbiguousURIError is returned for a URI that more than one upstream
// lists or has a template matching.
type AmbiguousURIError struct {
	URI string
	// Forms are the namespaced forms that reach each upstream.
	Forms []string
}

func (e *AmbiguousURIError) Error() string {
	forms := make([]string, len(e.Forms))
	for i, f := range e.Forms {
		forms[i] = strconv.Quote(text.Clip(f, 160))
	}
	return fmt.Sprintf("resource %q is served by more than one server; name the one you mean: %s", text.Clip(e.URI, 160), strings.Join(forms, " or "))
}

// buildResources sets v's resources and templates from listings: each
// upstream's first listing of a URI or template, every valid template,
// each exposed under its own form or, when namespaced and another upstream
// could claim it, under its namespaced form.
func (v *View) buildResources(listings []*Listing, namespaced bool) {
	v.uris = map[string][]*Resource{}
	v.order = map[string]int{}
	if namespaced {
		v.spaces = map[string]string{}
	}
	for i, l := range listings {
		v.order[l.Upstream] = i
		if namespaced {
			v.spaces[url.PathEscape(l.Upstream)] = l.Upstream
		}
		seen := map[string]bool{}
		for _, r := range l.Resources {
			if seen[r.URI] {
				v.Problems = append(v.Problems, Problem{l.Upstream, "resource", r.URI, "URI listed twice by this server"})
				continue
			}
			seen[r.URI] = true
			rr := *r
			rr.Exposed = r.URI
			v.Resources = append(v.Resources, &rr)
			v.uris[r.URI] = append(v.uris[r.URI], &rr)
		}
		seen = map[string]bool{}
		for _, t := range l.Templates {
			if seen[t.URITemplate] {
				v.Problems = append(v.Problems, Problem{l.Upstream, "template", t.URITemplate, "URI template listed twice by this server"})
				continue
			}
			ut, err := uritemplate.New(t.URITemplate)
			if err != nil {
				v.Problems = append(v.Problems, Problem{l.Upstream, "template", t.URITemplate, "invalid URI template: " + err.Error()})
				continue
			}
			seen[t.URITemplate] = true
			tt := *t
			tt.Exposed = t.URITemplate
			tt.match = ut.Regexp()
			tt.literal, _, _ = strings.Cut(t.URITemplate, "{")
			v.Templates = append(v.Templates, &tt)
		}
	}
	if !namespaced {
		return
	}
	claimed := v.claimed()
	for _, r := range v.Resources {
		if claimed[r] {
			r.Exposed = NamespacedURI(r.Upstream, r.URI)
		}
	}
	for _, t := range v.Templates {
		if claimed[t] {
			t.Exposed = NamespacedURI(t.Upstream, t.URITemplate)
		}
	}
}

// claimed returns the resources and templates another upstream could
// claim: a URI another lists too, a URI or template beginning with the
// text before the first expression of another's template (a template may
// match that URI, or overlap that template), and whatever looks
// namespaced already. It sorts once instead of comparing every pair, so
// that two upstreams of 10,000 items each cost milliseconds.
func (v *View) claimed() map[any]bool {
	claimed := map[any]bool{}
	type entry struct {
		text     string // a resource's URI, a template's literal beginning
		upstream string
		template bool
		item     any
	}
	var es []entry
	for uri, rs := range v.uris {
		for _, r := range rs {
			if len(rs) > 1 || strings.HasPrefix(uri, URIScheme) {
				claimed[r] = true
			}
			es = append(es, entry{uri, r.Upstream, false, r})
		}
	}
	for _, t := range v.Templates {
		if overlap(t.literal, URIScheme) {
			claimed[t] = true
		}
		es = append(es, entry{t.literal, t.Upstream, true, t})
	}
	// Sorted, the texts that begin with a text follow it, contiguous, and
	// a template sorts before a resource of the same text.
	slices.SortFunc(es, func(a, b entry) int {
		if c := strings.Compare(a.text, b.text); c != 0 {
			return c
		}
		return compareBool(b.template, a.template)
	})
	// A template is claimed by an item of another upstream that begins
	// with its text: the first item of another upstream after it.
	otherAfter := make([]int, len(es)+1)
	otherAfter[len(es)] = len(es)
	for i := len(es) - 1; i >= 0; i-- {
		otherAfter[i] = len(es)
		if i+1 < len(es) {
			if es[i+1].upstream != es[i].upstream {
				otherAfter[i] = i + 1
			} else {
				otherAfter[i] = otherAfter[i+1]
			}
		}
	}
	for i, e := range es {
		if e.template {
			if j := otherAfter[i]; j < len(es) && strings.HasPrefix(es[j].text, e.text) {
				claimed[e.item], claimed[es[j].item] = true, true
			}
		}
	}
	// An item is claimed by a template of another upstream whose text
	// begins it: the templates whose texts begin the current item form a
	// stack, each with (up to two of) the upstreams at or below it.
	type frame struct {
		text      string
		upstreams [2]string
	}
	var stack []frame
	for _, e := range es {
		for len(stack) > 0 && !strings.HasPrefix(e.text, stack[len(stack)-1].text) {
			stack = stack[:len(stack)-1]
		}
		var ups [2]string
		if len(stack) > 0 {
			ups = stack[len(stack)-1].upstreams
			if ups[0] != "" && ups[0] != e.upstream || ups[1] != "" && ups[1] != e.upstream {
				claimed[e.item] = true
			}
		}
		if e.template {
			switch {
			case ups[0] == "":
				ups[0] = e.upstream
			case ups[1] == "" && ups[0] != e.upstream:
				ups[1] = e.upstream
			}
			stack = append(stack, frame{e.text, ups})
		}
	}
	return claimed
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// overlap reports whether two templates' literal beginnings let some URI
// match both (as far as their beginnings tell).
func overlap(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// Resource returns the upstream that serves uri, as a client names it,
// and the URI the upstream knows it by. A namespaced URI reaches its
// upstream's resources and templates alone; any other reaches the one
// upstream that lists it or has a template matching it. The error is
// [ErrUnknownResource] or an [*AmbiguousURIError].
func (v *View) Resource(uri string) (upstream, target string, err error) {
	if name, rest, ok := v.namespace(uri); ok {
		if !v.serves(name, rest) {
			return "", "", ErrUnknownResource
		}
		return name, rest, nil
	}
	owners := v.owners(uri)
	switch len(owners) {
	case 0:
		return "", "", ErrUnknownResource
	case 1:
		return owners[0], uri, nil
	}
	e := &AmbiguousURIError{URI: uri}
	for _, o := range owners {
		e.Forms = append(e.Forms, NamespacedURI(o, uri))
	}
	return "", "", e
}

// ClientURIs returns the URIs by which a client may have reached the
// upstream's uri (to tell its subscribers of an update): its namespaced
// form, and uri itself if it reaches that upstream alone.
func (v *View) ClientURIs(upstream, uri string) []string {
	var out []string
	if v.spaces != nil {
		out = append(out, NamespacedURI(upstream, uri))
	}
	if up, target, err := v.Resource(uri); err == nil && up == upstream && target == uri {
		out = append(out, uri)
	}
	return out
}

// TemplateRef returns the template a completion/complete reference names:
// by its exposed form, its namespaced form, or the upstream's form when
// only one upstream lists it.
func (v *View) TemplateRef(pattern string) (*Template, bool) {
	for _, t := range v.Templates {
		if t.Exposed == pattern {
			return t, true
		}
	}
	name, rest, namespaced := v.namespace(pattern)
	var found *Template
	n := 0
	for _, t := range v.Templates {
		if namespaced && t.Upstream == name && t.URITemplate == rest || !namespaced && t.URITemplate == pattern {
			found = t
			n++
		}
	}
	return found, n == 1
}

// namespace splits a namespaced URI into its upstream's name and the URI
// the upstream knows. Without several upstreams nothing is namespaced.
func (v *View) namespace(uri string) (upstream, rest string, ok bool) {
	if v.spaces == nil || !strings.HasPrefix(uri, URIScheme) {
		return "", "", false
	}
	seg, rest, _ := strings.Cut(uri[len(URIScheme):], "/")
	return v.spaces[seg], rest, true
}

// serves reports whether the upstream lists uri or has a template
// matching it.
func (v *View) serves(upstream, uri string) bool {
	for _, r := range v.uris[uri] {
		if r.Upstream == upstream {
			return true
		}
	}
	for _, t := range v.Templates {
		if t.Upstream == upstream && strings.HasPrefix(uri, t.literal) && t.match.MatchString(uri) {
			return true
		}
	}
	return false
}

// owners returns the upstreams that list uri or have a template matching
// it, in configuration order.
func (v *View) owners(uri string) []string {
	var out []string
	for _, r := range v.uris[uri] {
		out = append(out, r.Upstream)
	}
	for _, t := range v.Templates {
		if strings.HasPrefix(uri, t.literal) && t.match.MatchString(uri) && !slices.Contains(out, t.Upstream) {
			out = append(out, t.Upstream)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return v.order[a] - v.order[b] })
	return out
}
