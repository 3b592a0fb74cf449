package upstream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep440"
)

// updateTensorFlow reads tensorflow's releases from PyPI's JSON API and,
// for each final release the DB lacks, the tensorflow[and-cuda] extra's
// Requires-Dist: its nvidia-cuda-runtime-cuNN and nvidia-cudnn-cuNN pins
// (or, where it gives a range, its lower bounds) give the row's cuda and
// cudnn (major.minor). The Python range is the
// CPython tags of the release's Linux x86_64 wheels. Releases older than
// the DB's oldest tensorflow row are skipped; a release without an
// and-cuda extra (before 2.14) cannot be a row and is reported.
func (o *options) updateTensorFlow(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	known, floor := knownVersions(db.TensorFlow, func(r matrix.TensorFlow) matrix.Version { return r.Version })
	projURL, versions, err := o.pypiNewReleases(ctx, SourceTensorFlow, "tensorflow", known, floor)
	if err != nil {
		return err
	}
	srcID := "upstream-pypi-tensorflow-" + ov.Date
	added := 0
	for _, v := range versions {
		row, reason, err := o.tensorflowRow(ctx, v, srcID)
		if err != nil {
			return err
		}
		name := "tensorflow " + v.String()
		u := o.pypiURL + "/pypi/tensorflow/" + v.String() + "/json"
		ov.Found = append(ov.Found, Finding{Source: SourceTensorFlow, What: name, URL: u})
		if reason != "" {
			ov.Incomplete = append(ov.Incomplete, Incomplete{Source: SourceTensorFlow, Row: name, Reason: reason, File: matrix.File{TensorFlow: []matrix.TensorFlow{row}}})
			continue
		}
		ov.File.TensorFlow = append(ov.File.TensorFlow, row)
		added++
	}
	if added > 0 || slices.ContainsFunc(ov.Incomplete, func(i Incomplete) bool { return i.Source == SourceTensorFlow }) {
		ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: srcID, URL: projURL, Retrieved: ov.Date,
			Title: "PyPI JSON API: tensorflow releases, their wheels' CPython tags and the tensorflow[and-cuda] extra's nvidia-* pins, read by gpuimg matrix update"})
	}
	o.progress(SourceTensorFlow, fmt.Sprintf("%d tensorflow rows new", added))
	return nil
}

// pypiNewReleases reads project's PyPI JSON and lists its new releases
// (newReleases), with the URL it read.
func (o *options) pypiNewReleases(ctx context.Context, src Source, project string, known map[string]bool, floor matrix.Version) (string, []matrix.Version, error) {
	projURL := o.pypiURL + "/pypi/" + project + "/json"
	o.progress(src, "reading "+projURL)
	var proj pypiProject
	if err := o.getJSON(ctx, projURL, &proj); err != nil {
		return projURL, nil, err
	}
	if proj.Releases == nil {
		return projURL, nil, &FormatError{URL: projURL, Err: fmt.Errorf("no \"releases\" object; not a PyPI project response")}
	}
	return projURL, newReleases(proj, known, floor), nil
}

// newReleases lists a PyPI project's final releases that have a file that
// is not yanked, are not known and are not older than floor, oldest first.
func newReleases(proj pypiProject, known map[string]bool, floor matrix.Version) []matrix.Version {
	var out []matrix.Version
	for s, files := range proj.Releases {
		pv, err := pep440.Parse(s)
		if err != nil || !pv.IsFinal() || strings.Contains(pv.Public(), "!") || !slices.ContainsFunc(files, func(f pypiFile) bool { return !f.Yanked }) {
			continue
		}
		v, err := matrix.ParseVersion(s)
		if err != nil || known[v.String()] || (!floor.IsZero() && v.Less(floor)) {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, matrix.Version.Compare)
	return out
}

// tensorflowRow reads one release. reason says why the row cannot be
// complete ("" when it is).
func (o *options) tensorflowRow(ctx context.Context, v matrix.Version, srcID string) (matrix.TensorFlow, string, error) {
	u := o.pypiURL + "/pypi/tensorflow/" + v.String() + "/json"
	o.progress(SourceTensorFlow, "reading "+u)
	var rel pypiProject
	if err := o.getJSON(ctx, u, &rel); err != nil {
		return matrix.TensorFlow{}, "", err
	}
	if rel.Info.Version != "" && rel.Info.Version != v.String() {
		return matrix.TensorFlow{}, "", &FormatError{URL: u, Err: fmt.Errorf("describes tensorflow %s, not %s", rel.Info.Version, v)}
	}
	row := matrix.TensorFlow{Version: v, Row: matrix.Row{Source: srcID}}
	var missing []string
	if py, ok := wheelPythonRange(rel.URLs); ok {
		row.Python = py
	} else {
		missing = append(missing, "python (no CPython Linux x86_64 wheel among the release's files)")
	}
	pins := map[string]string{}
	for _, line := range rel.Info.RequiresDist {
		r, err := parseRequirement(line)
		if err != nil {
			return matrix.TensorFlow{}, "", &FormatError{URL: u, Err: err}
		}
		if ok, err := o.holds(SourceTensorFlow, u, r, linuxX86(), "and-cuda"); err != nil {
			return matrix.TensorFlow{}, "", err
		} else if !ok {
			continue
		}
		if p, ok := exactPin(r); ok {
			row.Pins = append(row.Pins, p)
		}
		// Releases up to 2.18 pin ==; later ones may give a range,
		// whose lower bound is what they were built against.
		for _, lib := range []string{"nvidia-cuda-runtime-cu", "nvidia-cudnn-cu"} {
			switch {
			case !strings.HasPrefix(r.Name, lib):
			case r.pin() != "":
				pins[lib] = r.Name + "==" + r.pin()
			case r.lowerBound() != "":
				pins[lib] = r.Name + ">=" + r.lowerBound()
			}
		}
	}
	field := func(lib, what string, dst *matrix.Version) {
		p, ok := pins[lib]
		if !ok {
			missing = append(missing, what+" (the and-cuda extra gives no "+lib+"NN version)")
			return
		}
		ver := p[strings.IndexAny(p, "=>")+2:]
		pv, err := matrix.ParseVersion(ver)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s: %v)", what, p, err))
			return
		}
		*dst = pv.Trunc(2)
		verb := "pins"
		if strings.Contains(p, ">=") {
			verb = "requires (lower bound)"
		}
		row.Notes = append(row.Notes, fmt.Sprintf("%s: tensorflow[and-cuda] %s %s", what, verb, p))
	}
	field("nvidia-cuda-runtime-cu", "cuda", &row.CUDA)
	field("nvidia-cudnn-cu", "cudnn", &row.CuDNN)
	row.Notes = append(row.Notes, "read from "+u+"; the and-cuda pins are what pip installs, not the tested-build table of the install guide (not machine-readable)")
	if len(missing) > 0 {
		return row, "cannot fill " + strings.Join(missing, ", "), nil
	}
	return row, "", nil
}

// wheelPythonRange is the CPython range of a release's Linux x86_64
// wheels (cp310 … cp313 give >=3.10,<3.14).
func wheelPythonRange(files []pypiFile) (matrix.Constraint, bool) {
	lo, hi := -1, -1
	for _, f := range files {
		if !strings.HasSuffix(f.Filename, ".whl") {
			continue
		}
		w, err := parseWheelName(f.Filename)
		if err != nil || !w.x8664() {
			continue
		}
		m := cpythonRE.FindStringSubmatch(w.Python)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	if lo < 0 {
		return matrix.Constraint{}, false
	}
	c, err := matrix.ParseConstraint(fmt.Sprintf(">=3.%d,<3.%d", lo, hi+1))
	return c, err == nil
}
