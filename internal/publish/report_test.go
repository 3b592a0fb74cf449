package publish

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

const scriptErr = "build: pip install evil==1.0 | tee: <script>alert(1)</script>\nERROR: No matching distribution found for evil==1.0"

func reportTestVariant(name, cuda, torch, python string) Variant {
	return Variant{
		Name:   name,
		Tag:    "registry.example.com/ml/torch:" + name,
		Axes:   map[string]string{"cuda": cuda[:4], "torch": torch[:3], "python": python},
		Inputs: "sha256:" + strings.Repeat("ab", 32),
		Stack: matrix.Stack{
			CUDA: cuda, Python: python, OS: "ubuntu24.04", Flavor: "runtime",
			BaseImage: "nvidia/cuda:" + cuda + "-runtime-ubuntu24.04", MinDriver: "570.26",
			GPUArchs:   []string{"sm_80", "sm_90"},
			Frameworks: map[string]matrix.Framework{"torch": {Version: torch, CUDA: cuda[:4], Packages: []string{"torch==" + torch}}},
		},
	}
}

// reportFixture is a night with one variant of each kind, and skipped
// combinations.
func reportFixture() *Report {
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	return &Report{
		Repository: "registry.example.com/ml/torch",
		Started:    start,
		Finished:   start.Add(14*time.Minute + 32*time.Second),
		Results: []Result{{
			Variant: reportTestVariant("2.7.1-cu128-py3.12", "12.8.1", "2.7.1", "3.12"),
			Outcome: Published,
			Digest:  "sha256:" + strings.Repeat("0123456789abcdef", 4),
			Size:    3_435_973_837, Compression: "zstd", Builder: "tcp://buildkit-0:1234",
			BuildTime: 41 * time.Second, CachedSteps: 12, TotalSteps: 15, Verdict: matrix.Pass,
			Mirrors: []string{"mirror.example.com/ml/torch:2.7.1-cu128-py3.12"},
			Tags:    []string{"2.7.1-cu128", "latest"},
			Notes:   []string{"builder tcp://buildkit-1:1234 failed, retried on tcp://buildkit-0:1234: connection refused"},
		}, {
			Variant: reportTestVariant("2.6.0-cu124-py3.11", "12.4.1", "2.6.0", "3.11"),
			Outcome: Unchanged,
			Digest:  "sha256:" + strings.Repeat("fedcba9876543210", 4),
			Size:    3_000_000_000, Compression: "gzip", Verdict: matrix.Pass,
		}, {
			Variant: reportTestVariant("2.7.1-cu126-py3.11", "12.6.3", "2.7.1", "3.11"),
			Outcome: Failed, Builder: "tcp://buildkit-1:1234", BuildTime: 7 * time.Second,
			Error: scriptErr,
		}},
		Skipped: []Skipped{
			{Axes: map[string]string{"cuda": "12.8", "torch": "2.6", "python": "3.11"}, Reason: "excluded by publish.yaml"},
			{Axes: map[string]string{"cuda": "12.4", "torch": "2.7", "python": "3.13"}, Reason: "torch 2.7.1 has no wheels for Python 3.13"},
		},
	}
}

func TestWriteReportsRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	r := reportFixture()
	if err := WriteReports(dir, r, nil); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{ReportJUnit, ReportHTML, ReportJSON, ReportMarkdown}; !reflect.DeepEqual(names, want) {
		t.Errorf("report directory holds %v, want %v", names, want)
	}
	back, err := ReadReport(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("report.json round trip:\n got %+v\nwant %+v", back, r)
	}
	if r.Changes != nil {
		t.Errorf("WriteReports changed the caller's report")
	}
}

func TestReadReportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.json"), bad} {
		_, err := ReadReport(p)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "pass the report.json") {
			t.Errorf("ReadReport(%s) = %v, want an error naming the file and the fix", p, err)
		}
	}
}

func TestDiffReports(t *testing.T) {
	prev := reportFixture()
	prev.Started = prev.Started.Add(-24 * time.Hour)
	a, b, c := prev.Results[0], prev.Results[1], prev.Results[2]
	moved := a
	moved.Digest = "sha256:" + strings.Repeat("11", 32)
	fixed := c
	fixed.Outcome, fixed.Digest, fixed.Error = Published, "sha256:"+strings.Repeat("22", 32), ""
	b2 := b
	b2.Outcome, b2.Digest = Published, moved.Digest
	d := Result{Variant: reportTestVariant("2.8.0-cu128-py3.12", "12.8.1", "2.8.0", "3.12"), Outcome: Published}
	for _, tc := range []struct {
		name string
		cur  []Result
		want []Change
	}{
		{"nothing changed", []Result{a, b, c}, []Change{}},
		{"added and removed", []Result{a, d, c}, []Change{
			{Name: d.Variant.Name, Kind: ChangeAdded},
			{Name: b.Variant.Name, Kind: ChangeRemoved},
		}},
		{"digest moved", []Result{moved, b, c}, []Change{
			{Name: a.Variant.Name, Kind: ChangeDigest, From: a.Digest, To: moved.Digest},
		}},
		{"failure fixed: outcome changed, no digest before", []Result{a, b, fixed}, []Change{
			{Name: c.Variant.Name, Kind: ChangeOutcome, From: "failed", To: "published"},
		}},
		{"digest and outcome", []Result{a, b2}, []Change{
			{Name: c.Variant.Name, Kind: ChangeRemoved},
			{Name: b.Variant.Name, Kind: ChangeDigest, From: b.Digest, To: moved.Digest},
			{Name: b.Variant.Name, Kind: ChangeOutcome, From: "unchanged", To: "published"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := &Report{Results: tc.cur}
			got := DiffReports(prev, cur)
			if !got.Since.Equal(prev.Started) {
				t.Errorf("Since = %v, want the previous run's start %v", got.Since, prev.Started)
			}
			if !reflect.DeepEqual(got.List, tc.want) {
				t.Errorf("changes:\n got %+v\nwant %+v", got.List, tc.want)
			}
		})
	}
}

func renderReportString(t *testing.T, f func(io.Writer, *Report) error, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := f(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestMarkdown(t *testing.T) {
	withChanges := reportFixture()
	prev := reportFixture()
	prev.Started = prev.Started.Add(-24 * time.Hour)
	prev.Results[0].Digest = "sha256:" + strings.Repeat("99", 32)
	prev.Results = prev.Results[:2]
	withChanges.Changes = DiffReports(prev, withChanges)
	nothing := reportFixture()
	nothing.Changes = DiffReports(reportFixture(), nothing)
	for _, tc := range []struct {
		name    string
		r       *Report
		want    []string
		notWant []string
	}{
		{"a night", reportFixture(), []string{
			"## gpuimg publish: registry.example.com/ml/torch\n",
			"**3 variants: 1 published, 1 unchanged, 1 failed; 2 combinations skipped** · started 2026-11-30 02:00 UTC, took 14m32s\n",
			"### Failures\n\n- ❌ **2.7.1-cu126-py3.11**: build: pip install evil==1.0 | tee: &lt;script&gt;alert(1)&lt;/script&gt; ERROR: No matching distribution found for evil==1.0\n",
			"| 2.7.1-cu128-py3.12 (torch 2.7.1 cu128 py3.12) | ✅ published | `sha256:0123456789ab` | 3.2 GiB zstd | 41s | 12/15 | pass | mirror.example.com/ml/torch:2.7.1-cu128-py3.12, 2.7.1-cu128, latest |\n",
			"| 2.6.0-cu124-py3.11 (torch 2.6.0 cu124 py3.11) | ⏸️ unchanged | `sha256:fedcba987654` | 2.8 GiB gzip |  |  | pass |  |\n",
			"| 2.7.1-cu126-py3.11 (torch 2.7.1 cu126 py3.11) | ❌ failed |  |  | 7s |  |  |  |\n",
			"### Notes\n\n- **2.7.1-cu128-py3.12**: builder tcp://buildkit-1:1234 failed, retried on tcp://buildkit-0:1234: connection refused\n",
			"<details><summary>2 combinations skipped</summary>",
			"| cuda=12.4 python=3.13 torch=2.7 | torch 2.7.1 has no wheels for Python 3.13 |\n",
		}, []string{"<script>", "Changes since"}},
		{"changes since the previous run", withChanges, []string{
			"### Changes since the previous run (2026-11-29 02:00 UTC)\n\n",
			"- 2.7.1-cu126-py3.11: new variant\n",
			"- 2.7.1-cu128-py3.12: digest sha256:999999999999 → sha256:0123456789ab\n",
		}, nil},
		{"nothing changed", nothing, []string{"### Changes since the previous run (2026-11-30 02:00 UTC)\n\nNothing changed.\n"}, nil},
		{"empty", &Report{Repository: "r.example/x"}, []string{"**0 variants**\n"}, []string{"### Variants", "### Failures", "<details>"}},
		{"dry run", &Report{Repository: "r.example/x", Results: []Result{{Variant: Variant{Name: "a_b*c|d"}, Outcome: Planned}}},
			[]string{"**1 variant: 1 planned**", "| a\\_b\\*c\\|d (a\\_b\\*c\\|d) | 📝 planned |"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md := renderReportString(t, writeReportMarkdown, tc.r)
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(md, w) {
					t.Errorf("report.md has %q:\n%s", w, md)
				}
			}
			// Every row of a table has as many cells as its header: pipes in
			// values are escaped.
			cells := 0
			for line := range strings.SplitSeq(md, "\n") {
				if !strings.HasPrefix(line, "|") {
					cells = 0
					continue
				}
				n := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(line, -1))
				if cells == 0 {
					cells = n
				} else if n != cells {
					t.Errorf("table row with %d cells under a header of %d: %s", n-1, cells-1, line)
				}
			}
		})
	}
}

func TestMarkdownFitsStepSummary(t *testing.T) {
	r := &Report{Repository: "registry.example.com/ml/torch"}
	long := strings.Repeat("a very long error line ", 200)
	for i := range 6000 {
		v := reportTestVariant(fmt.Sprintf("v%04d", i), "12.8.1", "2.7.1", "3.12")
		r.Results = append(r.Results, Result{Variant: v, Outcome: Failed, Error: long,
			Mirrors: []string{strings.Repeat("m", 300), strings.Repeat("n", 300)}})
		r.Skipped = append(r.Skipped, Skipped{Axes: v.Axes, Reason: long})
	}
	md := renderReportString(t, writeReportMarkdown, r)
	if len(md) > MarkdownLimit {
		t.Fatalf("report.md is %d bytes, over GitHub's step summary limit %d", len(md), MarkdownLimit)
	}
	for _, w := range []string{"**6000 variants: 6000 failed; 6000 combinations skipped**", "more: see report.html or report.json._", "### Failures", "- ❌ **v0000**: a very long"} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md (%d bytes) lacks %q", len(md), w)
		}
	}
	if len(md) < MarkdownLimit/4 {
		t.Errorf("report.md is %d bytes: it dropped more rows than the limit asks", len(md))
	}
}

// junitDoc is junit.xml read back, with the attributes the common JUnit
// schema (junit-10.xsd) requires.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    *int     `xml:"tests,attr"`
	Failures *int     `xml:"failures,attr"`
	Suites   []struct {
		Name     *string `xml:"name,attr"`
		Tests    *int    `xml:"tests,attr"`
		Failures *int    `xml:"failures,attr"`
		Errors   *int    `xml:"errors,attr"`
		Skipped  *int    `xml:"skipped,attr"`
		Time     string  `xml:"time,attr"`
		Cases    []struct {
			Name    *string `xml:"name,attr"`
			Class   string  `xml:"classname,attr"`
			Time    string  `xml:"time,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			Out string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestJUnit(t *testing.T) {
	planned := reportFixture()
	for i := range planned.Results {
		planned.Results[i] = Result{Variant: planned.Results[i].Variant, Outcome: Planned}
	}
	// The schema's SUREFIRE_TIME pattern.
	timeRE := regexp.MustCompile(`^((([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?)$`)
	for _, tc := range []struct {
		name                     string
		r                        *Report
		tests, failures, skipped int
		failed                   string
		wantOut                  string
	}{
		// Each variant's case is followed by its signing's, skipped here
		// (no signing:).
		{"a night", reportFixture(), 6, 1, 3, "2.7.1-cu126-py3.11", "digest: sha256:0123"},
		{"dry run", planned, 6, 0, 6, "", "outcome: planned"},
		{"empty", &Report{Repository: "r.example/x"}, 0, 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := renderReportString(t, writeReportJUnit, tc.r)
			var doc junitDoc
			if err := xml.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("junit.xml does not parse: %v\n%s", err, out)
			}
			if len(doc.Suites) != 1 {
				t.Fatalf("%d test suites, want 1", len(doc.Suites))
			}
			s := doc.Suites[0]
			if s.Name == nil || s.Tests == nil || s.Failures == nil || s.Errors == nil || doc.Tests == nil || doc.Failures == nil {
				t.Fatalf("a required attribute is missing:\n%s", out)
			}
			if *s.Tests != tc.tests || *s.Failures != tc.failures || s.Skipped == nil || *s.Skipped != tc.skipped || *s.Errors != 0 {
				t.Errorf("tests/failures/skipped = %d/%d/%v, want %d/%d/%d", *s.Tests, *s.Failures, s.Skipped, tc.tests, tc.failures, tc.skipped)
			}
			if *doc.Tests != tc.tests || *doc.Failures != tc.failures {
				t.Errorf("testsuites tests/failures = %d/%d, want %d/%d", *doc.Tests, *doc.Failures, tc.tests, tc.failures)
			}
			if len(s.Cases) != tc.tests {
				t.Fatalf("%d test cases, want %d", len(s.Cases), tc.tests)
			}
			var failures, skipped int
			for i, c := range s.Cases {
				if c.Class == "gpuimg.publish.signing" {
					if c.Name == nil || *c.Name != tc.r.Results[i/2].Variant.Name+" signing" || c.Skipped == nil || c.Failure != nil {
						t.Errorf("test case %d: %v skipped %v, want %s's signing, skipped", i, c.Name, c.Skipped, tc.r.Results[i/2].Variant.Name)
					}
					skipped++
					continue
				}
				if c.Name == nil || i%2 != 0 || *c.Name != tc.r.Results[i/2].Variant.Name {
					t.Errorf("test case %d is named %v, want %s", i, c.Name, tc.r.Results[i/2].Variant.Name)
				}
				if !timeRE.MatchString(c.Time) {
					t.Errorf("test case %s: time %q does not match the schema", *c.Name, c.Time)
				}
				if c.Failure != nil {
					failures++
					if *c.Name != tc.failed || c.Failure.Text != scriptErr || c.Failure.Message != strings.Split(scriptErr, "\n")[0] {
						t.Errorf("failure of %s = %+v, want the variant's error", *c.Name, c.Failure)
					}
				}
				if c.Skipped != nil {
					skipped++
				}
			}
			if failures != tc.failures || skipped != tc.skipped {
				t.Errorf("%d failure and %d skipped elements, want %d and %d", failures, skipped, tc.failures, tc.skipped)
			}
			if !timeRE.MatchString(s.Time) {
				t.Errorf("suite time %q does not match the schema", s.Time)
			}
			if tc.wantOut != "" && !strings.Contains(s.Cases[0].Out, tc.wantOut) {
				t.Errorf("first test case's system-out lacks %q: %q", tc.wantOut, s.Cases[0].Out)
			}
		})
	}
}

func TestHTMLEscapedAndSelfContained(t *testing.T) {
	r := reportFixture()
	r.Repository = `registry.example.com/<b>ml</b>`
	r.Results[0].Variant.Name = `x" onmouseover="alert(1)`
	page := renderReportString(t, writeReportHTML, r)
	for _, bad := range []string{"<script", "<b>ml", `" onmouseover="`, "<link", "@import", "url(", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;b&gt;ml&lt;/b&gt;", `<section id="summary" class="bad">`, "GiB<br><small>zstd</small></td>", "GiB, gzip layers</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("report.html links outside itself: %s", m[0])
		}
	}
}

func TestWriteReportsAtomic(t *testing.T) {
	old := []byte(`{"repository":"previous run"}` + "\n")
	// seed is a report directory holding the previous run's report.json.
	seed := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ReportJSON), old, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	noTemps := func(t *testing.T, dir string) {
		t.Helper()
		tmp, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
		if len(tmp) > 0 {
			t.Errorf("temporary files left behind: %v", tmp)
		}
	}
	t.Run("render error writes nothing", func(t *testing.T) {
		dir := seed(t)
		r := reportFixture()
		err := writeReportFiles(dir, []reportFile{
			{ReportJSON, func(w io.Writer) error { return writeReportJSON(w, r) }},
			{ReportMarkdown, func(w io.Writer) error { return writeReportMarkdown(w, r) }},
			{ReportHTML, func(w io.Writer) error {
				_, err := io.WriteString(w, "<html>half")
				return errors.Join(errors.New("injected"), err)
			}},
		})
		if err == nil || !strings.Contains(err.Error(), "render report.html: injected") {
			t.Fatalf("err = %v, want the render error", err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ReportJSON)); !bytes.Equal(b, old) {
			t.Errorf("report.json changed to %q", b)
		}
		for _, n := range []string{ReportMarkdown, ReportHTML} {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				t.Errorf("%s was written", n)
			}
		}
		noTemps(t, dir)
	})
	t.Run("rename fails", func(t *testing.T) {
		dir := seed(t)
		// A directory where report.html goes: its rename fails after the
		// temporary files are written.
		if err := os.MkdirAll(filepath.Join(dir, ReportHTML, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		err := WriteReports(dir, reportFixture(), nil)
		if err == nil || !strings.Contains(err.Error(), ReportHTML) {
			t.Fatalf("err = %v, want an error naming report.html", err)
		}
		noTemps(t, dir)
		// What was replaced is whole.
		if _, err := ReadReport(filepath.Join(dir, ReportJSON)); err != nil {
			t.Error(err)
		}
	})
	t.Run("dir is a file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteReports(f, reportFixture(), nil)
		if err == nil || !strings.Contains(err.Error(), "writable report directory") {
			t.Fatalf("err = %v, want an error saying to choose a writable report directory", err)
		}
	})
	t.Run("read-only dir", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes into read-only directories")
		}
		dir := seed(t)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Error(err)
			}
		})
		if err := WriteReports(dir, reportFixture(), nil); err == nil {
			t.Fatal("no error writing into a read-only directory")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, ReportJSON)); !bytes.Equal(b, old) {
			t.Errorf("report.json changed to %q", b)
		}
	})
}

func TestProgress(t *testing.T) {
	r := reportFixture()
	var b bytes.Buffer
	p := NewProgress(&b, 8)
	p.Event(r.Results[0].Variant, "building on tcp://buildkit-0:1234")
	for _, res := range r.Results {
		p.Done(res)
	}
	p.Done(Result{Variant: Variant{Name: "plain", Tag: "r.example/x:plain"}, Outcome: Planned})
	p.Finish(r)
	want := `      torch 2.7.1 cu128 py3.12: building on tcp://buildkit-0:1234
[1/8] torch 2.7.1 cu128 py3.12: built in 41s, 12/15 steps cached, published sha256:0123456789ab, 1 mirror, 2 tags promoted
[2/8] torch 2.6.0 cu124 py3.11: unchanged, not rebuilt (sha256:fedcba987654)
[3/8] torch 2.7.1 cu126 py3.11: failed: build: pip install evil==1.0 | tee: <script>alert(1)</script>
      ERROR: No matching distribution found for evil==1.0
[4/8] plain: planned (dry run) as r.example/x:plain
3 variants: 1 published, 1 unchanged, 1 failed; 2 combinations skipped
`
	if b.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
	if p.Err() != nil {
		t.Error(p.Err())
	}
}

type failingProgressWriter struct{}

func (failingProgressWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestProgressConcurrentAndErrors(t *testing.T) {
	var b bytes.Buffer
	var mu sync.Mutex
	p := NewProgress(progressWriterFunc(func(s []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return b.Write(s) }), 12)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() { p.Done(Result{Variant: Variant{Name: fmt.Sprint(i)}, Outcome: Unchanged}) })
	}
	wg.Wait()
	for i := 1; i <= 12; i++ {
		if !strings.Contains(b.String(), fmt.Sprintf("[%2d/12] ", i)) {
			t.Errorf("no line [%2d/12]:\n%s", i, b.String())
		}
	}
	q := NewProgress(failingProgressWriter{}, 1)
	q.Done(Result{Outcome: Failed})
	if err := q.Err(); err == nil || !strings.Contains(err.Error(), "write progress: closed") {
		t.Errorf("Err() = %v, want the write error", err)
	}
}

type progressWriterFunc func([]byte) (int, error)

func (f progressWriterFunc) Write(b []byte) (int, error) { return f(b) }

// targetsFixture is a night with targets: the first variant imported
// for sagemaker/p5 (converted to Docker media types), the second refused
// by huawei/modelarts (over its size limit) after sagemaker/p5 took it.
func targetsFixture() *Report {
	r := reportFixture()
	pass := func(target, what string) matrix.Finding {
		return matrix.Finding{Name: "target:" + target + ":" + what, Status: matrix.Pass, Message: what + " ok"}
	}
	sm := TargetResult{Target: "sagemaker/p5", Ref: "123456789012.dkr.ecr.us-east-1.amazonaws.com/ml/torch@sha256:" + strings.Repeat("5a", 32),
		Digest:  "sha256:" + strings.Repeat("5a", 32),
		Changes: []matrix.Change{{What: "media-type", From: "oci", To: "docker"}},
		Verdict: matrix.Pass, Checks: []matrix.Finding{pass("sagemaker/p5", "driver"), pass("sagemaker/p5", "platform")}}
	r.Results[0].Targets = []TargetResult{sm}
	r.Results[1].Outcome = Failed
	r.Results[1].Error = "target huawei/modelarts: import refused for huawei/modelarts, nothing pushed (1 reason): over 9.5 GB"
	r.Results[1].Targets = []TargetResult{sm, {Target: "huawei/modelarts", Verdict: matrix.Fail, Checks: []matrix.Finding{
		pass("huawei/modelarts", "platform"),
		{Name: "target:huawei/modelarts:user", Status: matrix.Warn, Message: "runs as root; ModelArts runs UID 1101"},
		{Name: "target:huawei/modelarts:size", Status: matrix.Fail, Message: "10.2 GB uncompressed is over the 9.5 GB limit"},
	}}}
	return r
}

// TestReportTargets: each target a variant was imported into (or refused
// by) shows its verdict in report.md, report.html and junit.xml, with the
// checks that did not pass.
func TestReportTargets(t *testing.T) {
	r := targetsFixture()
	md := renderReportString(t, writeReportMarkdown, r)
	for _, w := range []string{
		"### Targets\n\n| Variant | Target | Verdict | Changes | Reference | Checks |\n",
		"| 2.6.0-cu124-py3.11 | huawei/modelarts | ❌ fail |  |  | warn user: runs as root; ModelArts runs UID 1101; fail size: 10.2 GB uncompressed is over the 9.5 GB limit |\n",
		"| 2.6.0-cu124-py3.11 | sagemaker/p5 | ✅ pass | media-type oci → docker | 123456789012.dkr.ecr.us-east-1.amazonaws.com/ml/torch@sha256:5a5a",
		"| 2.7.1-cu128-py3.12 | sagemaker/p5 | ✅ pass | media-type oci → docker |",
		" | 2 checks passed |\n",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("report.md lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(renderReportString(t, writeReportMarkdown, reportFixture()), "### Targets") {
		t.Error("report.md has a Targets section without targets")
	}

	page := renderReportString(t, writeReportHTML, r)
	for _, w := range []string{
		`<section id="targets">`,
		`<tr class="target fail" data-variant="2.6.0-cu124-py3.11" data-target="huawei/modelarts">`,
		`<td>warn user: runs as root; ModelArts runs UID 1101; fail size: 10.2 GB uncompressed is over the 9.5 GB limit</td>`,
		`<td class="mono ref">123456789012.dkr.ecr.us-east-1.amazonaws.com/ml/torch@sha256:5a5a`,
		`<td>media-type oci → docker</td>`,
		`<td>2 checks passed</td>`,
	} {
		if !strings.Contains(page, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
	if strings.Count(page, `<tr class="target `) != 3 {
		t.Errorf("report.html has %d target rows, want 3", strings.Count(page, `<tr class="target `))
	}
	if strings.Contains(renderReportString(t, writeReportHTML, reportFixture()), `id="targets"`) {
		t.Error("report.html has a Targets section without targets")
	}

	out := renderReportString(t, writeReportJUnit, r)
	var doc junitDoc
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, out)
	}
	s := doc.Suites[0]
	// 3 variants (2 failed), 3 target imports (1 refused) and 3 signing
	// cases (skipped: no signing:).
	if *s.Tests != 9 || *s.Failures != 3 || *doc.Tests != 9 || *doc.Failures != 3 || len(s.Cases) != 9 {
		t.Fatalf("tests/failures = %d/%d (%d cases), want 9/3", *s.Tests, *s.Failures, len(s.Cases))
	}
	byName := map[string]int{}
	for i, c := range s.Cases {
		byName[*c.Name] = i
	}
	refused, ok := byName["2.6.0-cu124-py3.11 → huawei/modelarts"]
	if !ok {
		t.Fatalf("no test case for the refused import: %v", byName)
	}
	c := s.Cases[refused]
	if c.Failure == nil || c.Failure.Message != "refused by huawei/modelarts: size: 10.2 GB uncompressed is over the 9.5 GB limit" ||
		!strings.Contains(c.Out, "verdict: fail\n") || !strings.Contains(c.Out, "warn user: runs as root") || !strings.Contains(c.Out, "pass platform: platform ok") {
		t.Errorf("refused import: failure %+v, system-out %q", c.Failure, c.Out)
	}
	c = s.Cases[byName["2.7.1-cu128-py3.12 → sagemaker/p5"]]
	if c.Failure != nil || !strings.Contains(c.Out, "verdict: pass\nref: 123456789012.dkr.ecr") || !strings.Contains(c.Out, "changes: media-type oci → docker") || !strings.Contains(c.Out, "pass driver: driver ok") {
		t.Errorf("imported: failure %+v, system-out %q", c.Failure, c.Out)
	}
	if byName["2.7.1-cu128-py3.12 → sagemaker/p5"] != byName["2.7.1-cu128-py3.12"]+1 {
		t.Errorf("a target's test case does not follow its variant's: %v", byName)
	}
}
