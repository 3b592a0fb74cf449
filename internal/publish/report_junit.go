package publish

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/matrix"
)

// The JUnit XML below follows the schema CI tools share (Jenkins' and the
// xunit plugin's junit-10.xsd, which GitLab, GitHub reporters and others
// read): testsuites > testsuite (name, tests, failures, errors required) >
// testcase (name required) with at most one failure or skipped element.

type junitTestsuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Time     string           `xml:"time,attr,omitempty"`
	Suites   []junitTestsuite `xml:"testsuite"`
}

type junitTestsuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr,omitempty"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitTestcase `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// junitSeconds is a time as JUnit writes it: seconds with three decimals.
func junitSeconds(d time.Duration) string {
	return fmt.Sprintf("%.3f", d.Seconds())
}

// writeReportJUnit writes one test case per variant, one per target
// import after it (junitTarget) and its signing's after those
// (junitSigning): a failed variant
// fails with its error, a planned one (--dry-run) is skipped, published
// and unchanged ones pass. The skipped combinations are the suite's
// system-out (they are not variants, so not test cases).
func writeReportJUnit(w io.Writer, r *Report) error {
	name := "gpuimg publish " + r.Repository
	s := junitTestsuite{Name: name, Tests: len(r.Results)}
	if !r.Started.IsZero() {
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
		if !r.Finished.IsZero() && r.Finished.After(r.Started) {
			s.Time = junitSeconds(r.Finished.Sub(r.Started))
		}
	}
	s.Properties = &junitProps{Props: []junitProp{{Name: "repository", Value: r.Repository}}}
	for _, res := range r.Results {
		tc := junitTestcase{Name: res.Variant.Name, ClassName: "gpuimg.publish"}
		if res.BuildTime > 0 {
			tc.Time = junitSeconds(res.BuildTime)
		}
		switch res.Outcome {
		case Failed:
			s.Failures++
			first, _, _ := strings.Cut(res.Error, "\n")
			tc.Failure = &junitMessage{Message: first, Type: "failed", Text: res.Error}
		case Planned:
			s.Skipped++
			tc.Skipped = &junitMessage{Message: "dry run: planned, not built"}
		}
		tc.SystemOut = junitOut(res)
		s.Cases = append(s.Cases, tc)
		for _, tr := range res.Targets {
			s.Cases = append(s.Cases, junitTarget(res, tr))
			s.Tests++
			if tr.Verdict == matrix.Fail {
				s.Failures++
			}
		}
		sc := junitSigning(res)
		s.Cases = append(s.Cases, sc)
		s.Tests++
		switch {
		case sc.Failure != nil:
			s.Failures++
		case sc.Skipped != nil:
			s.Skipped++
		}
	}
	if len(r.Skipped) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s skipped:\n", reportPlural(len(r.Skipped), "combination"))
		for _, sk := range r.Skipped {
			fmt.Fprintf(&b, "  %s: %s\n", AxesString(sk.Axes), sk.Reason)
		}
		s.SystemOut = b.String()
	}
	doc := junitTestsuites{Name: name, Tests: s.Tests, Failures: s.Failures, Time: s.Time, Suites: []junitTestsuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitTarget is the test case of one variant's import for one target,
// named "VARIANT → TARGET", classname gpuimg.publish.target: it fails
// when the target refused the variant, with the failed checks as the
// message and text; its system-out lists every check of the target, as
// gpuimg validate -o junit does, and the reference pushed.
func junitTarget(res Result, tr TargetResult) junitTestcase {
	tc := junitTestcase{Name: res.Variant.Name + " → " + tr.Target, ClassName: "gpuimg.publish.target"}
	var failed, lines []string
	for _, c := range tr.Checks {
		name := targetCheckName(tr.Target, c.Name)
		lines = append(lines, fmt.Sprintf("%s %s: %s", c.Status, name, c.Message))
		if c.Status == matrix.Fail {
			failed = append(failed, name+": "+c.Message)
		}
	}
	if tr.Verdict == matrix.Fail {
		tc.Failure = &junitMessage{Message: "refused by " + tr.Target + ": " + strings.Join(failed, "; "), Type: "refused", Text: strings.Join(failed, "\n")}
	}
	head := []string{"target: " + tr.Target, "verdict: " + string(tr.Verdict)}
	if tr.Ref != "" {
		head = append(head, "ref: "+tr.Ref, "changes: "+targetChanges(tr))
	}
	tc.SystemOut = strings.Join(append(head, lines...), "\n") + "\n"
	return tc
}

// junitSigning is the test case of one variant's signing, named
// "VARIANT signing", classname gpuimg.publish.signing: it fails when
// signing (which signing: requires of every published variant) failed,
// is skipped when the file has no signing: or signing was not attempted,
// and passes when the variant was signed or its tag's evidence verified.
// Its system-out names the key and format and lists what was signed.
func junitSigning(res Result) junitTestcase {
	tc := junitTestcase{Name: res.Variant.Name + " signing", ClassName: "gpuimg.publish.signing"}
	sg := res.Signing
	if sg == nil {
		tc.Skipped = &junitMessage{Message: "signing not configured (the publish file has no signing: key)"}
		return tc
	}
	switch sg.Status {
	case SignFailed:
		first, _, _ := strings.Cut(sg.Reason, "\n")
		tc.Failure = &junitMessage{Message: "signing failed: " + first, Type: "signing", Text: sg.Reason}
	case SignSkipped:
		tc.Skipped = &junitMessage{Message: sg.Reason}
	}
	lines := []string{"signing: " + string(sg.Status), "key: " + sg.Key.Ref}
	if sg.Key.Fingerprint != "" {
		lines = append(lines, "key fingerprint: "+sg.Key.Fingerprint)
	}
	lines = append(lines, "format: "+string(sg.Format))
	if sg.Reason != "" {
		lines = append(lines, "reason: "+sg.Reason)
	}
	for _, m := range sg.Signatures {
		l := "signed " + m.Digest
		if m.Referrer != "" {
			l += " (referrer " + m.Referrer + ")"
		}
		if m.LegacyTag != "" {
			l += " (tag " + m.LegacyTag + ")"
		}
		lines = append(lines, l)
	}
	for _, a := range sg.Attestations {
		lines = append(lines, fmt.Sprintf("attested %s %s of %s (referrer %s)", a.Kind, a.PredicateType, a.Subject, a.Referrer))
	}
	for _, d := range sg.SBOMs {
		lines = append(lines, "sbom referrer "+d)
	}
	tc.SystemOut = strings.Join(lines, "\n") + "\n"
	return tc
}

// junitOut is a test case's system-out: what happened to the variant.
func junitOut(r Result) string {
	var lines []string
	add := func(k, v string) {
		if v != "" {
			lines = append(lines, k+": "+v)
		}
	}
	add("variant", VariantLabel(r.Variant))
	add("outcome", string(r.Outcome))
	add("tag", r.Variant.Tag)
	add("digest", r.Digest)
	add("inputs", r.Variant.Inputs)
	add("builder", r.Builder)
	add("cached steps", cacheReuse(r))
	add("verdict", string(r.Verdict))
	add("mirrors", strings.Join(r.Mirrors, ", "))
	add("tags", strings.Join(r.Tags, ", "))
	return strings.Join(lines, "\n") + "\n"
}
