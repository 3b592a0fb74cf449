package publish

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/internal/atomicfile"
	"github.com/gpuimg/gpuimg/internal/bound"
)

// The files WriteReports writes into the report directory.
const (
	ReportJSON     = "report.json"
	ReportMarkdown = "report.md"
	ReportJUnit    = "junit.xml"
	ReportHTML     = "report.html"
)

// WriteReports writes the run's report into dir (created if missing) as
// report.json, report.md (fit for $GITHUB_STEP_SUMMARY), junit.xml (one
// test case per variant) and report.html (one self-contained page). since
// is the previous run's report (--since) or nil; when given, every file says
// what changed since then. All four are rendered before anything is
// written, and each file is replaced atomically (a temporary file in dir,
// then a rename), so an error never leaves a half-written file behind.
// r is not modified.
func WriteReports(dir string, r *Report, since *Report) error {
	if r == nil {
		return errors.New("write reports: no report")
	}
	rep := *r
	if since != nil {
		rep.Changes = DiffReports(since, r)
	}
	return writeReportFiles(dir, []reportFile{
		{ReportJSON, func(w io.Writer) error { return writeReportJSON(w, &rep) }},
		{ReportMarkdown, func(w io.Writer) error { return writeReportMarkdown(w, &rep) }},
		{ReportJUnit, func(w io.Writer) error { return writeReportJUnit(w, &rep) }},
		{ReportHTML, func(w io.Writer) error { return writeReportHTML(w, &rep) }},
	})
}

// ReadReport loads a report.json written by WriteReports, for --since.
func ReadReport(path string) (*Report, error) {
	b, err := bound.ReadFile(path, "", bound.MaxReport)
	if err != nil {
		return nil, fmt.Errorf("read previous report %s: %w; pass the report.json of an earlier gpuimg publish run", path, err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read previous report %s: %w; pass the report.json of an earlier gpuimg publish run", path, err)
	}
	return &r, nil
}

// DiffReports says what changed from prev to cur, matching variants by
// Name: variants added and removed, digests that moved and outcomes that
// changed. A variant without a digest in either run (failed, planned) has
// no digest change.
func DiffReports(prev, cur *Report) *Changes {
	c := &Changes{Since: prev.Started, List: []Change{}}
	old := map[string]Result{}
	for _, p := range prev.Results {
		old[p.Variant.Name] = p
	}
	now := map[string]bool{}
	var changed []Change
	for _, n := range cur.Results {
		name := n.Variant.Name
		now[name] = true
		p, ok := old[name]
		if !ok {
			c.List = append(c.List, Change{Name: name, Kind: ChangeAdded})
			continue
		}
		if p.Digest != "" && n.Digest != "" && p.Digest != n.Digest {
			changed = append(changed, Change{Name: name, Kind: ChangeDigest, From: p.Digest, To: n.Digest})
		}
		if p.Outcome != n.Outcome {
			changed = append(changed, Change{Name: name, Kind: ChangeOutcome, From: string(p.Outcome), To: string(n.Outcome)})
		}
	}
	for _, p := range prev.Results {
		if !now[p.Variant.Name] {
			c.List = append(c.List, Change{Name: p.Variant.Name, Kind: ChangeRemoved})
		}
	}
	c.List = append(c.List, changed...)
	return c
}

// ReportCounts are a report's headline numbers.
type ReportCounts struct {
	Variants, Published, Unchanged, Failed, Planned int
	// Skipped counts the matrix combinations that are not variants.
	Skipped int
}

// Counts counts the report's variants by outcome.
func (r *Report) Counts() ReportCounts {
	c := ReportCounts{Variants: len(r.Results), Skipped: len(r.Skipped)}
	for _, res := range r.Results {
		switch res.Outcome {
		case Published:
			c.Published++
		case Unchanged:
			c.Unchanged++
		case Failed:
			c.Failed++
		case Planned:
			c.Planned++
		}
	}
	return c
}

// Summary is the counts in one line: "8 variants: 5 published, 2
// unchanged, 1 failed; 3 combinations skipped". Zero counts are left out.
func (c ReportCounts) Summary() string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{c.Published, "published"}, {c.Unchanged, "unchanged"}, {c.Failed, "failed"}, {c.Planned, "planned"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	s := reportPlural(c.Variants, "variant")
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if c.Skipped > 0 {
		s += "; " + reportPlural(c.Skipped, "combination") + " skipped"
	}
	return s
}

func reportPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// failuresFirst returns the results with the failed ones first, the
// others in their order.
func failuresFirst(rs []Result) []Result {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b Result) int {
		af, bf := a.Outcome == Failed, b.Outcome == Failed
		switch {
		case af && !bf:
			return -1
		case bf && !af:
			return 1
		}
		return 0
	})
	return out
}

// reportShortDigest is "sha256:" and the first 12 hex digits.
func reportShortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return algo + ":" + hex[:12]
}

// reportDuration is a build time for people: 41s, 2m5s, 0.35s; "" for 0.
func reportDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < 10*time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// cacheReuse is "12/15" (cached of total steps), "" when unknown.
func cacheReuse(r Result) string {
	if r.TotalSteps == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", r.CachedSteps, r.TotalSteps)
}

// VariantLabel names a variant for people by what is in it: "torch 2.7.1
// cu128 py3.12" (frameworks, the CUDA major and minor, Python); its Name
// when the stack is empty.
func VariantLabel(v Variant) string {
	if s := v.Stack.Short(); s != "" {
		return s
	}
	return v.Name
}

func writeReportJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// reportFile is one file of the report and how to render it.
type reportFile struct {
	name   string
	render func(io.Writer) error
}

// writeReportFiles renders every file into memory, then writes each to a
// temporary file in dir and renames them into place. On any error nothing
// is left half-written: the temporary files are removed and the files not
// yet renamed keep their previous content.
func writeReportFiles(dir string, files []reportFile) (err error) {
	rendered := make([][]byte, len(files))
	for i, f := range files {
		var b bytes.Buffer
		if err := f.render(&b); err != nil {
			return fmt.Errorf("render %s: %w", f.name, err)
		}
		rendered[i] = b.Bytes()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report directory: %w; choose a writable report directory", err)
	}
	var temps []string
	defer func() {
		for _, t := range temps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	for i, f := range files {
		t, err := atomicfile.WriteTemp(filepath.Join(dir, f.name), rendered[i])
		if err != nil {
			return fmt.Errorf("write %s: %w; choose a writable report directory", filepath.Join(dir, f.name), err)
		}
		temps = append(temps, t)
	}
	for i, f := range files {
		dst := filepath.Join(dir, f.name)
		if err := os.Rename(temps[i], dst); err != nil {
			return fmt.Errorf("write %s: %w", dst, err)
		}
		temps[i] = ""
	}
	return nil
}
