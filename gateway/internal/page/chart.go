package page

import (
	"fmt"
	"net/http"
	"time"

	"github.com/preflightmcp/preflight/gateway/internal/audit"
)

// Bounds of the chart.
const (
	// chartBuckets is the number of bars.
	chartBuckets = 24
	// chartMaxRecords bounds the records read for the chart; past it the
	// chart shows the latest calls and says so.
	chartMaxRecords = 20000
)

// chartView is the chart of calls over a window: one panel by effect, one
// by decision.
type chartView struct {
	From, To  time.Time
	Total     int
	Truncated bool
	Panels    []panel
}

// panel is one stacked bar chart, laid out for SVG.
type panel struct {
	Title  string
	W, H   int
	Bars   []chartBar
	Legend []legendEntry
	Max    int
	Ticks  []tick
	// Top and Bottom are the plot area's y coordinates; Left its x.
	Top, Bottom, Left float64
}

type chartBar struct {
	X, W  float64
	Segs  []seg
	Title string
}

type seg struct {
	Y, H  float64
	Class string
	Title string
}

type legendEntry struct {
	Class, Label string
	Count        int
}

type tick struct {
	X     float64
	Label string
}

// series is one stacked series: its label, its CSS class, and what record
// belongs to it.
type series struct {
	label, class string
	of           func(*audit.Record) bool
}

func effectSeries() []series {
	s := []series{}
	for _, e := range []string{"read", "write", "external", "delete"} {
		s = append(s, series{e, "e-" + e, func(r *audit.Record) bool { return string(r.Effect) == e }})
	}
	return append(s, series{"unknown", "e-unknown", func(r *audit.Record) bool {
		switch r.Effect {
		case "read", "write", "external", "delete":
			return false
		}
		return true
	}})
}

func decisionSeries() []series {
	s := []series{}
	for _, d := range audit.Decisions() {
		s = append(s, series{string(d), "d-" + string(d), func(r *audit.Record) bool { return r.Decision == d }})
	}
	return s
}

// chart reads the window's calls (the viewer's own unless an admin) and
// lays out the panels.
func (h *Handler) chart(r *http.Request) (*chartView, error) {
	now := time.Now().UTC()
	from := now.Add(-h.opts.ChartWindow)
	f := audit.Filter{Since: from, Newest: true, Limit: chartMaxRecords + 1}
	if v := viewerOf(r); !v.Identity.Admin {
		f.Principal = v.Identity.Principal
	}
	var recs []*audit.Record
	for rec, err := range h.opts.Audit.Query(r.Context(), f) {
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	c := &chartView{From: from, To: now}
	if len(recs) > chartMaxRecords {
		recs, c.Truncated = recs[:chartMaxRecords], true
	}
	c.Total = len(recs)
	c.Panels = []panel{
		layout("Calls by effect", from, now, recs, effectSeries()),
		layout("Calls by decision", from, now, recs, decisionSeries()),
	}
	return c, nil
}

// layout counts recs into chartBuckets bars of the series and places them.
func layout(title string, from, to time.Time, recs []*audit.Record, ss []series) panel {
	p := panel{Title: title, W: 480, H: 160, Left: 34, Top: 8, Bottom: 136}
	step := to.Sub(from) / chartBuckets
	counts := make([][]int, chartBuckets)
	for i := range counts {
		counts[i] = make([]int, len(ss))
	}
	totals := make([]int, len(ss))
	for _, rec := range recs {
		b := int(rec.Time.Sub(from) / step)
		if b < 0 || b >= chartBuckets {
			continue
		}
		for i, s := range ss {
			if s.of(rec) {
				counts[b][i]++
				totals[i]++
				break
			}
		}
	}
	for _, row := range counts {
		sum := 0
		for _, n := range row {
			sum += n
		}
		p.Max = max(p.Max, sum)
	}
	scale := 0.0
	if p.Max > 0 {
		scale = (p.Bottom - p.Top) / float64(p.Max)
	}
	plotW := float64(p.W) - p.Left - 4
	barW := plotW / chartBuckets
	for b, row := range counts {
		start := from.Add(time.Duration(b) * step)
		bar := chartBar{X: p.Left + float64(b)*barW + 1, W: barW - 2}
		y := p.Bottom
		sum := 0
		for i, n := range row {
			if n == 0 {
				continue
			}
			hgt := float64(n) * scale
			y -= hgt
			sum += n
			bar.Segs = append(bar.Segs, seg{Y: y, H: hgt, Class: ss[i].class,
				Title: fmt.Sprintf("%s: %d %s", start.Format("Jan 2 15:04"), n, ss[i].label)})
		}
		bar.Title = fmt.Sprintf("%s: %d calls", start.Format("Jan 2 15:04"), sum)
		p.Bars = append(p.Bars, bar)
		if b%6 == 0 {
			layout := "15:04"
			if to.Sub(from) > 48*time.Hour {
				layout = "Jan 2"
			}
			p.Ticks = append(p.Ticks, tick{X: bar.X, Label: start.Format(layout)})
		}
	}
	for i, s := range ss {
		p.Legend = append(p.Legend, legendEntry{Class: s.class, Label: s.label, Count: totals[i]})
	}
	return p
}
