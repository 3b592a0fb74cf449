package validate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error { return r.WriteTextWidth(w, 0) }

// WriteTextWidth writes the report for people, its tables fitted to width
// columns of text (0: unlimited): library paths are shortened in the
// middle, kernel lists and check messages wrap.
func (r *Report) WriteTextWidth(w io.Writer, width int) error {
	f := r.Found
	fmt.Fprintf(w, "image   %s\ndigest  %s\n", r.Image, r.Digest)
	if r.Platform != "" {
		fmt.Fprintf(w, "platform %s\n", r.Platform)
	}
	fmt.Fprintln(w)
	tw := humanize.NewTable(w, width).Fit(0, humanize.CutMiddle).Fit(1, humanize.Wrap)
	tw.Row("found", "")
	row := func(k, v string) {
		if v != "" {
			tw.Row("  "+k, v)
		}
	}
	row("OS", strings.TrimSpace(f.OS+" "+paren(f.OSPretty)))
	row("CUDA", f.CUDA)
	row("cuDNN", f.CuDNN)
	row("NCCL", f.NCCL)
	row("cuBLAS", f.CuBLAS)
	row("Python", f.Python)
	if f.Torch != nil {
		row("torch", f.Torch.Version+" (CUDA "+orNone(f.Torch.CUDA)+")")
	}
	for _, n := range []string{"tensorflow", "jax", "jaxlib"} {
		row(n, f.Packages[n])
	}
	row("pip packages", strconv.Itoa(len(f.Packages)))
	libs := slices.Sorted(maps.Keys(f.Kernels))
	for _, p := range libs {
		k := f.Kernels[p]
		v := strings.Join(k.SASS, " ")
		if len(k.PTX) > 0 {
			v += " +PTX " + strings.Join(k.PTX, " ")
		}
		row("/"+p, v)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Coverage != nil {
		for i, line := range humanize.WrapText(r.Coverage.Line(), max(width-12, 0)) {
			label := "  coverage  "
			if i > 0 {
				label = "            "
			}
			fmt.Fprintf(w, "%s%s\n", label, line)
		}
	}
	fmt.Fprintln(w, "\nchecks")
	tw = humanize.NewTable(w, width).Shrink(2).Fit(2, humanize.Wrap)
	for _, c := range r.Checks {
		tw.Row("  "+strings.ToUpper(string(c.Status)), c.Name, c.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	strict := ""
	if r.Strict && r.Verdict == matrix.Fail && matrix.Verdict(r.Checks) != matrix.Fail {
		strict = " (--strict: unknown and warning checks fail)"
	}
	_, err := fmt.Fprintf(w, "\nverdict: %s%s\n", r.Verdict, strict)
	return err
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func orNone(s string) string {
	if s == "" {
		return "none: CPU build"
	}
	return s
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the checks as a JUnit XML test suite (one test case
// per check; failures fail, unknown checks are skipped with their message,
// warnings pass with their message as output; under Strict unknown and
// warning checks fail).
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "gpuimg validate " + r.Image, Tests: len(r.Checks)}
	for _, c := range r.Checks {
		tc := junitCase{Name: c.Name, ClassName: "gpuimg." + r.Kind}
		switch {
		case c.Status == matrix.Fail, r.Strict && (c.Status == matrix.UnknownFact || c.Status == matrix.Warn):
			s.Failures++
			tc.Failure = &junitFailure{Message: c.Message, Text: c.Message}
		case c.Status == matrix.UnknownFact:
			s.Skipped++
			tc.Skipped = &junitSkipped{Message: c.Message}
		default:
			tc.SystemOut = string(c.Status) + ": " + c.Message
		}
		s.Cases = append(s.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// ParseBandwidth reads "1Gbps", "100Mbps", "10 Gbit/s", "500M" as bits per second.
func ParseBandwidth(s string) (float64, error) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	for _, suf := range []string{"bit/s", "bps", "b/s", "bit"} {
		t = strings.TrimSuffix(t, suf)
	}
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, strings.TrimSuffix(t, "k")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bandwidth %q: write it like 1Gbps or 200Mbps", s)
	}
	return v * mult, nil
}
