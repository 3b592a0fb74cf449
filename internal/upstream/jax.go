package upstream

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// pypiProject is the part of PyPI's JSON API response
// (GET /pypi/NAME/json and /pypi/NAME/VERSION/json) the updater reads.
type pypiProject struct {
	Info struct {
		Name           string   `json:"name"`
		Version        string   `json:"version"`
		RequiresPython string   `json:"requires_python"`
		RequiresDist   []string `json:"requires_dist"`
	} `json:"info"`
	Releases map[string][]pypiFile `json:"releases"`
	URLs     []pypiFile            `json:"urls"`
}

type pypiFile struct {
	Filename   string `json:"filename"`
	UploadTime string `json:"upload_time_iso_8601"`
	Yanked     bool   `json:"yanked"`
}

var cudaExtraRE = regexp.MustCompile(`^cuda([0-9]+)$`)

// updateJAX reads jax's releases from PyPI's JSON API and, for each the
// DB lacks, the jax[cudaNN] extras' requirements and the CUDA plugin's
// nvidia-* minimums. Releases older than the DB's oldest jax row, and
// releases without a cudaNN extra, are skipped.
func (o *options) updateJAX(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	known, floor := knownVersions(db.JAX, func(r matrix.JAX) matrix.Version { return r.Version })
	projURL, versions, err := o.pypiNewReleases(ctx, SourceJAX, "jax", known, floor)
	if err != nil {
		return err
	}
	srcID := "upstream-pypi-jax-" + ov.Date
	added := 0
	for _, v := range versions {
		row, reason, err := o.jaxRow(ctx, v, srcID, ov)
		if err != nil {
			return err
		}
		name := "jax " + v.String()
		switch {
		case len(row.Variants) == 0 && reason == "":
			o.progress(SourceJAX, name+": no jax[cudaNN] extra; skipped")
			continue
		case reason != "":
			ov.Incomplete = append(ov.Incomplete, Incomplete{Source: SourceJAX, Row: name, Reason: reason, File: matrix.File{JAX: []matrix.JAX{row}}})
		default:
			ov.File.JAX = append(ov.File.JAX, row)
			added++
		}
		var extras []string
		for _, jv := range row.Variants {
			extras = append(extras, jv.Extra)
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceJAX, Row: name + " " + jv.Extra, Field: "min_driver", Reason: "the minimum driver is only in the installation guide's prose"})
		}
		ov.Found = append(ov.Found, Finding{Source: SourceJAX, What: fmt.Sprintf("%s (%s)", name, strings.Join(extras, ", ")), URL: o.pypiURL + "/pypi/jax/" + v.String() + "/json"})
	}
	if added > 0 || slices.ContainsFunc(ov.Incomplete, func(i Incomplete) bool { return i.Source == SourceJAX }) {
		ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: srcID, URL: projURL, Retrieved: ov.Date,
			Title: "PyPI JSON API: jax releases, the jax[cudaNN] extras' Requires-Dist and the jax-cudaNN-plugin [with-cuda] nvidia-* minimums, read by gpuimg matrix update"})
	}
	o.progress(SourceJAX, fmt.Sprintf("%d jax rows new", added))
	return nil
}

// jaxRow reads one release. reason is why a required field is missing
// ("" when the row is complete); a row with no variants and no reason
// has no CUDA extra.
func (o *options) jaxRow(ctx context.Context, v matrix.Version, srcID string, ov *Overlay) (matrix.JAX, string, error) {
	u := o.pypiURL + "/pypi/jax/" + v.String() + "/json"
	o.progress(SourceJAX, "reading "+u)
	var rel pypiProject
	if err := o.getJSON(ctx, u, &rel); err != nil {
		return matrix.JAX{}, "", err
	}
	if rel.Info.Version != "" && rel.Info.Version != v.String() {
		return matrix.JAX{}, "", &FormatError{URL: u, Err: fmt.Errorf("describes jax %s, not %s", rel.Info.Version, v)}
	}
	row := matrix.JAX{Version: v, Row: matrix.Row{Source: srcID}}
	var missing []string
	if rel.Info.RequiresPython != "" {
		c, err := pythonConstraint(rel.Info.RequiresPython)
		if err != nil {
			missing = append(missing, "python ("+err.Error()+")")
		}
		row.Python = c
	}
	byExtra := map[string][]requirement{}
	for _, line := range rel.Info.RequiresDist {
		r, err := parseRequirement(line)
		if err != nil {
			return matrix.JAX{}, "", &FormatError{URL: u, Err: err}
		}
		for _, e := range r.extras() {
			if !cudaExtraRE.MatchString(e) {
				continue
			}
			if ok, err := o.holds(SourceJAX, u, r, linuxX86(), e); err != nil {
				return matrix.JAX{}, "", err
			} else if ok {
				byExtra[e] = append(byExtra[e], r)
			}
		}
	}
	extras := make([]string, 0, len(byExtra))
	for e := range byExtra {
		extras = append(extras, e)
	}
	slices.Sort(extras)
	for _, extra := range extras {
		major := cudaExtraRE.FindStringSubmatch(extra)[1]
		reqs := slices.Clone(byExtra[extra])
		jv := matrix.JAXVariant{Extra: extra}
		jv.CUDA, _ = matrix.ParseVersion(major)
		read := []string{u}
		for _, r := range byExtra[extra] {
			if r.Name != "jax-cuda"+major+"-plugin" || r.pin() == "" {
				continue
			}
			pu := o.pypiURL + "/pypi/" + r.Name + "/" + r.pin() + "/json"
			o.progress(SourceJAX, "reading "+pu)
			var plug pypiProject
			if err := o.getJSON(ctx, pu, &plug); err != nil {
				return matrix.JAX{}, "", err
			}
			for _, line := range plug.Info.RequiresDist {
				pr, err := parseRequirement(line)
				if err != nil {
					return matrix.JAX{}, "", &FormatError{URL: pu, Err: err}
				}
				if ok, err := o.holds(SourceJAX, pu, pr, linuxX86(), "with-cuda"); err != nil {
					return matrix.JAX{}, "", err
				} else if ok {
					reqs = append(reqs, pr)
				}
			}
			read = append(read, pu)
		}
		// lower is the lower bound of lib's wheel for this CUDA major, by
		// any of its names (CUDA 13's suffix-less nvidia-cuda-runtime too),
		// and the name that gave it.
		lower := func(lib string) (string, string) {
			for _, name := range wheelNames(lib, major) {
				for _, r := range reqs {
					if r.Name == name {
						return r.lowerBound(), name
					}
				}
			}
			return "", ""
		}
		minCUDA, cudaFrom := lower("cuda-runtime")
		if minCUDA == "" {
			minCUDA, cudaFrom = lower("cuda-nvcc")
		}
		jv.Requires = wheelRanges(reqs)
		if mv, err := matrix.ParseVersion(minCUDA); err == nil && minCUDA != "" {
			jv.MinCUDA = mv.Trunc(2)
			jv.Notes = append(jv.Notes, fmt.Sprintf("min_cuda: %s>=%s", cudaFrom, minCUDA))
		} else {
			missing = append(missing, extra+" min_cuda (no nvidia-cuda-runtime/nvcc lower bound)")
		}
		if dnn, _ := lower("cudnn"); dnn != "" {
			if dv, err := matrix.ParseVersion(dnn); err == nil {
				jv.MinCuDNN = dv.Trunc(2)
				jv.Notes = append(jv.Notes, fmt.Sprintf("min_cudnn: nvidia-cudnn-cu%s>=%s", major, dnn))
			}
		} else {
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceJAX, Row: "jax " + v.String() + " " + extra, Field: "min_cudnn", Reason: "no nvidia-cudnn lower bound in the extra or the plugin's [with-cuda]"})
		}
		jv.Notes = append(jv.Notes, "read from "+strings.Join(read, " and "))
		row.Variants = append(row.Variants, jv)
	}
	if len(missing) > 0 {
		return row, "cannot fill " + strings.Join(missing, ", "), nil
	}
	return row, "", nil
}

// wheelNames are the names lib's wheel has for CUDA major, as
// matrix.LibraryWheels lists them: nvidia-cuda-runtime-cu12 for 12; for 13
// the -cu13 name and the suffix-less one the CUDA 13 plugins require
// (nvidia-cuda-runtime>=13.0.48).
func wheelNames(lib, major string) []string {
	var out []string
	for _, n := range matrix.LibraryWheels(lib) {
		if strings.HasSuffix(n, "-cu"+major) || (n == "nvidia-"+lib && atLeast13(major)) {
			out = append(out, n)
		}
	}
	return out
}

// wheelRanges are the nvidia-* requirements of reqs that carry a version
// range, as the matrix records them (JAXVariant.Requires).
func wheelRanges(reqs []requirement) []matrix.WheelRange {
	var out []matrix.WheelRange
	for _, r := range reqs {
		if !strings.HasPrefix(r.Name, "nvidia-") || r.Set.IsZero() {
			continue
		}
		if w, err := matrix.ParseWheelRange(r.Name + r.Set.String()); err == nil {
			out = append(out, w)
		}
	}
	return out
}

// atLeast13 says a CUDA major string is 13 or newer, the majors whose
// component wheels carry no suffix.
func atLeast13(major string) bool {
	n, err := strconv.Atoi(major)
	return err == nil && n >= 13
}
