package publish

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gpuimg/gpuimg/internal/humanize"
	"github.com/gpuimg/gpuimg/matrix"
)

// MarkdownLimit is the most report.md holds: GitHub Actions refuses a step
// summary ($GITHUB_STEP_SUMMARY) over 1 MiB ("supports content up to a size
// of 1024k"). A report that would be larger lists fewer rows and says how
// many more are in report.html and report.json.
const MarkdownLimit = 1 << 20

// mdCellMax is the most runes of one value (an error, a list of mirrors)
// in a Markdown cell or line; the full text is in report.html and
// report.json.
const mdCellMax = 400

// mdLimits are how many entries of each list report.md shows.
type mdLimits struct{ failures, rows, changes, skipped int }

func writeReportMarkdown(w io.Writer, r *Report) error {
	lim := mdLimits{len(r.Results), len(r.Results), 0, len(r.Skipped)}
	if r.Changes != nil {
		lim.changes = len(r.Changes.List)
	}
	for {
		b := renderMarkdown(r, lim)
		if len(b) <= MarkdownLimit || lim == (mdLimits{}) {
			_, err := w.Write(b)
			return err
		}
		lim = mdLimits{lim.failures / 2, lim.rows / 2, lim.changes / 2, lim.skipped / 2}
	}
}

func renderMarkdown(r *Report, lim mdLimits) []byte {
	var b bytes.Buffer
	c := r.Counts()
	fmt.Fprintf(&b, "## gpuimg publish: %s\n\n", mdText(r.Repository))
	fmt.Fprintf(&b, "**%s**", mdText(c.Summary()))
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, " · started %s", r.Started.UTC().Format("2006-01-02 15:04 MST"))
		if !r.Finished.IsZero() {
			fmt.Fprintf(&b, ", took %s", r.Finished.Sub(r.Started).Round(time.Second))
		}
	}
	b.WriteString("\n\n")

	var failed []Result
	for _, res := range r.Results {
		if res.Outcome == Failed {
			failed = append(failed, res)
		}
	}
	if len(failed) > 0 {
		b.WriteString("### Failures\n\n")
		for i, res := range failed {
			if i == lim.failures {
				mdMore(&b, len(failed)-i, "failure")
				break
			}
			fmt.Fprintf(&b, "- ❌ **%s**: %s\n", mdText(res.Variant.Name), mdText(mdClip(res.Error)))
		}
		b.WriteString("\n")
	}

	if len(r.Results) > 0 {
		b.WriteString("### Variants\n\n")
		b.WriteString("| Variant | Outcome | Digest | Size | Build | Cached steps | Verdict | Mirrors, tags |\n")
		b.WriteString("| --- | --- | --- | --: | --: | --: | --- | --- |\n")
		rows := failuresFirst(r.Results)
		for i, res := range rows {
			if i == lim.rows {
				b.WriteString("\n")
				mdMore(&b, len(rows)-i, "variant")
				break
			}
			size := ""
			if res.Size > 0 {
				size = humanize.Bytes(res.Size)
				if res.Compression != "" {
					size += " " + string(res.Compression)
				}
			}
			digest := ""
			if res.Digest != "" {
				digest = "`" + reportShortDigest(res.Digest) + "`"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n",
				mdCell(res.Variant.Name+" ("+VariantLabel(res.Variant)+")"), mdOutcome(res.Outcome), digest, size,
				reportDuration(res.BuildTime), cacheReuse(res), mdCell(string(res.Verdict)),
				mdCell(mdClip(strings.Join(append(slices.Clone(res.Mirrors), res.Tags...), ", "))))
		}
		b.WriteString("\n")
	}

	var targets []string
	for _, res := range failuresFirst(r.Results) {
		for _, tr := range res.Targets {
			targets = append(targets, fmt.Sprintf("| %s | %s | %s | %s | %s | %s |",
				mdCell(res.Variant.Name), mdCell(tr.Target), mdVerdict(tr.Verdict), mdCell(mdClip(targetChanges(tr))),
				mdCell(tr.Ref), mdCell(mdClip(targetChecks(tr)))))
		}
	}
	if len(targets) > 0 {
		b.WriteString("### Targets\n\n")
		b.WriteString("| Variant | Target | Verdict | Changes | Reference | Checks |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		for i, row := range targets {
			if i == lim.rows {
				b.WriteString("\n")
				mdMore(&b, len(targets)-i, "target import")
				break
			}
			b.WriteString(row + "\n")
		}
		b.WriteString("\n")
	}

	var signing []string
	for _, res := range failuresFirst(r.Results) {
		if sg := res.Signing; sg != nil {
			signing = append(signing, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", mdCell(res.Variant.Name),
				mdSignStatus(sg.Status), mdCell(signManifests(sg)), mdCell(mdClip(signAttested(sg))),
				mdCell(reportPlural(len(sg.SBOMs), "SBOM")), mdCell(signKeyText(sg.Key)+", "+string(sg.Format)), mdCell(mdClip(sg.Reason))))
		}
	}
	if len(signing) > 0 {
		b.WriteString("### Signing\n\n")
		b.WriteString("| Variant | Signing | Signed | Attested | SBOM referrers | Key, format | Reason |\n| --- | --- | --- | --- | --- | --- | --- |\n")
		for i, row := range signing {
			if i == lim.rows {
				b.WriteString("\n")
				mdMore(&b, len(signing)-i, "signing outcome")
				break
			}
			b.WriteString(row + "\n")
		}
		b.WriteString("\n")
	}

	var notes []string
	for _, res := range r.Results {
		for _, n := range res.Notes {
			notes = append(notes, "- **"+mdText(res.Variant.Name)+"**: "+mdText(mdClip(n)))
		}
	}
	if len(notes) > 0 {
		b.WriteString("### Notes\n\n")
		for i, n := range notes {
			if i == lim.failures {
				mdMore(&b, len(notes)-i, "note")
				break
			}
			b.WriteString(n + "\n")
		}
		b.WriteString("\n")
	}

	if r.Changes != nil {
		b.WriteString("### Changes since the previous run")
		if !r.Changes.Since.IsZero() {
			fmt.Fprintf(&b, " (%s)", r.Changes.Since.UTC().Format("2006-01-02 15:04 MST"))
		}
		b.WriteString("\n\n")
		if len(r.Changes.List) == 0 {
			b.WriteString("Nothing changed.\n")
		}
		for i, ch := range r.Changes.List {
			if i == lim.changes {
				mdMore(&b, len(r.Changes.List)-i, "change")
				break
			}
			fmt.Fprintf(&b, "- %s\n", mdText(changeText(ch)))
		}
		b.WriteString("\n")
	}

	if len(r.Skipped) > 0 {
		fmt.Fprintf(&b, "<details><summary>%s skipped</summary>\n\n", reportPlural(len(r.Skipped), "combination"))
		b.WriteString("| Combination | Reason |\n| --- | --- |\n")
		for i, s := range r.Skipped {
			if i == lim.skipped {
				b.WriteString("\n")
				mdMore(&b, len(r.Skipped)-i, "combination")
				break
			}
			fmt.Fprintf(&b, "| %s | %s |\n", mdCell(AxesString(s.Axes)), mdCell(mdClip(s.Reason)))
		}
		b.WriteString("\n</details>\n")
	}
	return b.Bytes()
}

func mdMore(b *bytes.Buffer, n int, what string) {
	fmt.Fprintf(b, "_…and %s more: see report.html or report.json._\n", reportPlural(n, what))
}

func mdOutcome(o Outcome) string {
	switch o {
	case Published:
		return "✅ published"
	case Unchanged:
		return "⏸️ unchanged"
	case Failed:
		return "❌ failed"
	case Planned:
		return "📝 planned"
	}
	return mdCell(string(o))
}

// mdVerdict is a target's verdict with its mark.
func mdVerdict(v matrix.Status) string {
	switch v {
	case matrix.Pass:
		return "✅ pass"
	case matrix.Warn:
		return "⚠️ warn"
	case matrix.Fail:
		return "❌ fail"
	case matrix.UnknownFact:
		return "❔ unknown"
	}
	return mdCell(string(v))
}

// targetChanges is what an import changed, "none" when it pushed the
// image byte for byte.
func targetChanges(tr TargetResult) string {
	if tr.Verdict == matrix.Fail {
		return ""
	}
	if len(tr.Changes) == 0 {
		return "none"
	}
	parts := make([]string, len(tr.Changes))
	for i, c := range tr.Changes {
		parts[i] = c.What + " " + c.From + " → " + c.To
	}
	return strings.Join(parts, ", ")
}

// targetChecks names the target's checks that did not pass, with their
// messages, or counts the passed ones when all passed.
func targetChecks(tr TargetResult) string {
	var bad []string
	for _, c := range tr.Checks {
		if c.Status != matrix.Pass {
			bad = append(bad, string(c.Status)+" "+targetCheckName(tr.Target, c.Name)+": "+c.Message)
		}
	}
	if len(bad) == 0 {
		return reportPlural(len(tr.Checks), "check") + " passed"
	}
	return strings.Join(bad, "; ")
}

// targetCheckName is a target check's name without its target:NAME:
// prefix (the row names the target).
func targetCheckName(target, check string) string {
	return strings.TrimPrefix(check, "target:"+target+":")
}

// changeText says one change in words.
func changeText(c Change) string {
	switch c.Kind {
	case ChangeAdded:
		return c.Name + ": new variant"
	case ChangeRemoved:
		return c.Name + ": removed (no longer in the matrix)"
	case ChangeDigest:
		return fmt.Sprintf("%s: digest %s → %s", c.Name, reportShortDigest(c.From), reportShortDigest(c.To))
	case ChangeOutcome:
		return fmt.Sprintf("%s: %s → %s", c.Name, c.From, c.To)
	}
	return fmt.Sprintf("%s: %s %s → %s", c.Name, c.Kind, c.From, c.To)
}

// AxesString is a variant's or a skipped combination's axes as
// "cuda=12.8 python=3.12 torch=2.6" (keys sorted), as the expand table and
// the reports write them.
func AxesString(axes map[string]string) string {
	keys := make([]string, 0, len(axes))
	for k := range axes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + axes[k]
	}
	return strings.Join(parts, " ")
}

// mdClip shortens s to mdCellMax runes.
func mdClip(s string) string {
	if r := []rune(s); len(r) > mdCellMax {
		return string(r[:mdCellMax]) + "…"
	}
	return s
}

// mdText makes s safe as Markdown text on one line: HTML and Markdown
// syntax are shown, not interpreted, and newlines become spaces.
var mdText = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;",
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"\r\n", " ", "\n", " ", "\r", " ").Replace

// mdCell is mdText that also keeps a table cell's pipes.
func mdCell(s string) string {
	return strings.ReplaceAll(mdText(s), "|", `\|`)
}

// mdSignStatus is a signing status with its mark.
func mdSignStatus(st SignStatus) string {
	switch st {
	case SignSigned:
		return "🔏 signed"
	case SignVerified:
		return "✅ verified"
	case SignFailed:
		return "❌ failed"
	case SignSkipped:
		return "⏭️ skipped"
	}
	return mdCell(string(st))
}

// signManifests counts the manifests signed ("" when none).
func signManifests(s *SignResult) string {
	if len(s.Signatures) == 0 {
		return ""
	}
	return reportPlural(len(s.Signatures), "manifest")
}

// signAttested counts a variant's signed statements by kind, in the order
// gpuimg verify --require names them: "2 validation, 1 sbom".
func signAttested(s *SignResult) string {
	var parts []string
	for _, k := range []AttestationKind{AttestValidation, AttestSBOM, AttestProvenance, AttestOther} {
		if n := s.Count(k); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}

// signKeyText names the key: its reference and short fingerprint.
func signKeyText(k SignKey) string {
	if k.Fingerprint == "" {
		return k.Ref
	}
	return k.Ref + " (" + reportShortDigest(k.Fingerprint) + ")"
}
