package upstream

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// runtimeReqRE names the requirements whose version is the CUDA release a
// torch wheel was built against: the CUDA runtime wheel (with its -cuNN
// suffix up to CUDA 12, without it from CUDA 13) and the cuda-toolkit
// metapackage CUDA 13 wheels pin instead of each component.
var runtimeReqRE = regexp.MustCompile(`^(nvidia-cuda-runtime(-cu[0-9]+)?|cuda-toolkit)$`)

// pypiDefault is what PyPI's wheel of one torch release says about its
// CUDA: the variant (major.minor) and the requirement that says so.
type pypiDefault struct {
	cuda matrix.Version
	req  string // nvidia-cuda-runtime-cu12==12.8.90
	w    wheel
}

// updateTorchPyPI reads PyPI's simple page for torch and, for every
// release the matrix (or this run's torch rows) holds, the core metadata
// of its Linux x86_64 wheel: the CUDA runtime it requires names the
// variant plain "pip install torch==X" installs. A row that flags no
// variant, or another one, is written with PyPI's (the wheel is what pip
// installs, so it wins; the note names what the row said). Releases the
// matrix lacks are SourceTorch's to add.
func (o *options) updateTorchPyPI(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	page := o.pypiURL + "/simple/torch/"
	o.progress(SourceTorchPyPI, "reading "+page)
	body, err := o.get(ctx, page, "text/html")
	if err != nil {
		return err
	}
	wheels, skipped, err := parseSimplePage(page, body)
	if err != nil {
		return err
	}
	o.warnSkipped(SourceTorchPyPI, page, skipped)
	byVersion := map[string][]wheel{}
	for _, w := range wheels {
		if w.Local == "" && w.final() && w.x8664() {
			byVersion[w.Version] = append(byVersion[w.Version], w)
		}
	}
	changed := 0
	for _, rel := range torchRows(db, ov) {
		ws, ok := byVersion[rel.Version.String()]
		if !ok {
			continue
		}
		name := "torch " + rel.Version.String()
		def, reason, err := o.readPyPIDefault(ctx, pickWheel(ws))
		if err != nil {
			return err
		}
		if reason != "" {
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorchPyPI, Row: name, Field: "pypi", Reason: reason})
			continue
		}
		row, what, ok := flagPyPIVariant(rel, def, ov.Date)
		if what == "" {
			continue
		}
		if !ok {
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorchPyPI, Row: name, Field: "pypi", Reason: what})
			continue
		}
		putTorchRow(ov, row)
		ov.Found = append(ov.Found, Finding{Source: SourceTorchPyPI, What: name + ": " + what, URL: def.w.MetadataURL()})
		changed++
	}
	if changed > 0 {
		ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: "upstream-pypi-torch-" + ov.Date, URL: page, Retrieved: ov.Date,
			Title: "PyPI simple page for torch (PEP 503) and each release's Linux x86_64 wheel core metadata (PEP 658/714): the CUDA runtime it requires names the variant plain pip install gets, read by gpuimg matrix update"})
	}
	o.progress(SourceTorchPyPI, fmt.Sprintf("%d torch rows with PyPI's default variant new or changed", changed))
	return nil
}

// torchRows are the torch rows to judge: this run's (new or extended)
// first, then the matrix's, each release once.
func torchRows(db *matrix.DB, ov *Overlay) []matrix.Torch {
	seen := map[string]bool{}
	var out []matrix.Torch
	for _, rows := range [][]matrix.Torch{ov.File.Torch, db.Torch} {
		for _, t := range rows {
			if !seen[t.Version.String()] {
				seen[t.Version.String()] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// putTorchRow puts row into the overlay, replacing this run's row of the
// same release.
func putTorchRow(ov *Overlay, row matrix.Torch) {
	if i := slices.IndexFunc(ov.File.Torch, func(t matrix.Torch) bool { return t.Version.Compare(row.Version) == 0 }); i >= 0 {
		ov.File.Torch[i] = row
		return
	}
	ov.File.Torch = append(ov.File.Torch, row)
}

// readPyPIDefault reads w's core metadata and finds the CUDA it requires.
// reason says why none could be read (no metadata offered, no CUDA
// runtime requirement); err is a file that could not be read or trusted.
func (o *options) readPyPIDefault(ctx context.Context, w wheel) (pypiDefault, string, error) {
	if !w.Metadata {
		return pypiDefault{}, "PyPI's page offers no core metadata (PEP 658) for " + w.Filename + ", and gpuimg does not download wheels", nil
	}
	md, err := o.readMetadata(ctx, w)
	if err != nil {
		return pypiDefault{}, "", err
	}
	for _, line := range md.RequiresDist {
		r, err := parseRequirement(line)
		if err != nil {
			return pypiDefault{}, "", &FormatError{URL: w.MetadataURL(), Err: err}
		}
		if !runtimeReqRE.MatchString(r.Name) {
			continue
		}
		if ok, err := o.holds(SourceTorchPyPI, w.MetadataURL(), r, wheelEnv(w), ""); err != nil {
			return pypiDefault{}, "", err
		} else if !ok {
			continue
		}
		if cuda, ok := cudaOfRequirement(r); ok {
			return pypiDefault{cuda: cuda, req: strings.TrimSpace(strings.Split(line, ";")[0]), w: w}, "", nil
		}
	}
	return pypiDefault{}, fmt.Sprintf("%s requires no CUDA runtime wheel (nvidia-cuda-runtime or cuda-toolkit) on Linux x86_64 (%s); which CUDA it bundles is only in the wheel", w.Filename, w.MetadataURL()), nil
}

// cudaOfRequirement is the CUDA major.minor of a runtime requirement's
// lowest named version (==12.8.90, ~=13.0.48, ==13.0.2 → 12.8, 13.0).
func cudaOfRequirement(r requirement) (matrix.Version, bool) {
	for _, s := range r.Specs {
		switch s.Op {
		case "==", "===", "~=", ">=":
			v, err := matrix.ParseVersion(strings.TrimSuffix(strings.TrimSuffix(s.Version, ".*"), "*"))
			if err == nil && v.Major() > 0 {
				return v.Trunc(2), true
			}
		}
	}
	return matrix.Version{}, false
}

// flagPyPIVariant marks rel's variant for def's CUDA as PyPI's default.
// what is "" when the row already says so; ok is false (what then the
// reason) when the row has no variant for that CUDA.
func flagPyPIVariant(rel matrix.Torch, def pypiDefault, date string) (row matrix.Torch, what string, ok bool) {
	tag := "cu" + matrix.CUDATag(def.cuda)
	i := slices.IndexFunc(rel.Variants, func(v matrix.TorchVariant) bool { return v.CUDA.Trunc(2).Compare(def.cuda) == 0 })
	if i < 0 {
		return rel, fmt.Sprintf("PyPI's wheel %s requires %s (CUDA %s), but the row has no %s variant; add it (gpuimg matrix update --only torch) first", def.w.Filename, def.req, def.cuda, tag), false
	}
	if rel.Variants[i].PyPI {
		return rel, "", true
	}
	row = rel
	row.Variants = slices.Clone(rel.Variants)
	note := fmt.Sprintf("pypi: PyPI's wheel %s requires %s (core metadata %s, read %s)", def.w.Filename, def.req, def.w.MetadataURL(), date)
	what = "PyPI serves " + tag
	if j := slices.IndexFunc(row.Variants, func(v matrix.TorchVariant) bool { return v.PyPI }); j >= 0 {
		old := "cu" + matrix.CUDATag(row.Variants[j].CUDA)
		note += "; the matrix said " + old + ", PyPI's metadata wins (it is what pip installs)"
		what += ", the matrix said " + old
		row.Variants[j].PyPI = false
	}
	v := row.Variants[i]
	v.PyPI = true
	v.Notes = append(slices.Clone(v.Notes), note)
	row.Variants[i] = v
	return row, what, true
}
