package publish

import (
	_ "embed"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

//go:embed report.html.tmpl
var reportHTMLText string

// reportHTML is report.html's template: one page, its CSS inline, nothing
// fetched from elsewhere; html/template escapes every value.
var reportHTML = template.Must(template.New("report.html").Funcs(template.FuncMap{
	"short":         reportShortDigest,
	"bytes":         humanize.Bytes,
	"duration":      reportDuration,
	"cache":         cacheReuse,
	"label":         VariantLabel,
	"axes":          AxesString,
	"change":        changeText,
	"join":          func(s []string) string { return strings.Join(s, ", ") },
	"time":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 MST") },
	"frameworks":    htmlFrameworks,
	"targetChanges": targetChanges,
	"targetChecks":  targetChecks,
	"signManifests": signManifests,
	"signAttested":  signAttested,
	"signKey":       signKeyText,
}).Parse(reportHTMLText))

// htmlData is what the template renders.
type htmlData struct {
	*Report
	Counts   ReportCounts
	Summary  string
	Took     string
	Failures []Result
	Rows     []Result
	// Targets are the target imports of every variant, in Rows' order.
	Targets []htmlTarget
	// Signing are the rows with a signing outcome, in Rows' order.
	Signing []Result
}

// htmlTarget is one variant's import for one target.
type htmlTarget struct {
	Variant string
	TargetResult
}

func writeReportHTML(w io.Writer, r *Report) error {
	d := htmlData{Report: r, Counts: r.Counts(), Rows: failuresFirst(r.Results)}
	d.Summary = d.Counts.Summary()
	if !r.Started.IsZero() && r.Finished.After(r.Started) {
		d.Took = r.Finished.Sub(r.Started).Round(time.Second).String()
	}
	for _, res := range r.Results {
		if res.Outcome == Failed {
			d.Failures = append(d.Failures, res)
		}
	}
	for _, res := range d.Rows {
		for _, tr := range res.Targets {
			d.Targets = append(d.Targets, htmlTarget{Variant: res.Variant.Name, TargetResult: tr})
		}
		if res.Signing != nil {
			d.Signing = append(d.Signing, res)
		}
	}
	return reportHTML.Execute(w, d)
}

// htmlFrameworks is "torch 2.7.1 (cu128), torchvision …" in a fixed order.
func htmlFrameworks(fws map[string]matrix.Framework) string {
	names := make([]string, 0, len(fws))
	for n := range fws {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		f := fws[n]
		parts[i] = n + " " + f.Version
		if f.CUDA != "" {
			parts[i] += " (CUDA " + f.CUDA + ")"
		}
	}
	return strings.Join(parts, ", ")
}
