package upstream

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
	"github.com/gpuimg/gpuimg/matrix/pep508"
)

var (
	cudaLocalRE = regexp.MustCompile(`^cu([0-9]+)([0-9])$`)
	cpythonRE   = regexp.MustCompile(`^cp3([0-9]+)t?$`)
)

// cudaOfLocal turns a wheel's local label (cu128) into its CUDA version
// (12.8); ok is false for cpu, rocm and other builds.
func cudaOfLocal(local string) (matrix.Version, bool) {
	m := cudaLocalRE.FindStringSubmatch(local)
	if m == nil {
		return matrix.Version{}, false
	}
	v, err := matrix.ParseVersion(m[1] + "." + m[2])
	return v, err == nil
}

// torchRelease is one version on the all-variants page: its CUDA wheels by
// local label.
type torchRelease struct {
	version  matrix.Version
	variants map[string][]wheel // cu128 -> wheels
}

// updateTorch reads BASE/torch/ and adds rows for releases (and CUDA
// variants of known releases) the DB lacks. Releases older than the
// DB's oldest torch row are out of the data's scope and skipped.
func (o *options) updateTorch(ctx context.Context, db *matrix.DB, ov *Overlay) error {
	page := o.torchURL + "/torch/"
	o.progress(SourceTorch, "reading "+page)
	releases, err := o.readTorchPage(ctx, page)
	if err != nil {
		return err
	}
	known := map[string]*matrix.Torch{}
	var floor matrix.Version
	for i := range db.Torch {
		t := &db.Torch[i]
		known[t.Version.String()] = t
		if floor.IsZero() || t.Version.Less(floor) {
			floor = t.Version
		}
	}
	srcID := "upstream-torch-index-" + ov.Date
	var rows []matrix.Torch
	comp := companions{o: o}
	for _, rel := range releases {
		if !floor.IsZero() && rel.version.Less(floor) {
			continue
		}
		have := known[rel.version.String()]
		var tags []string
		for tag := range rel.variants {
			cuda, _ := cudaOfLocal(tag)
			if have == nil || !slices.ContainsFunc(have.Variants, func(v matrix.TorchVariant) bool { return v.CUDA.Compare(cuda) == 0 }) {
				tags = append(tags, tag)
			}
		}
		if len(tags) == 0 {
			continue
		}
		slices.SortFunc(tags, func(a, b string) int { ca, _ := cudaOfLocal(a); cb, _ := cudaOfLocal(b); return ca.Compare(cb) })
		o.progress(SourceTorch, fmt.Sprintf("torch %s: reading core metadata of %s", rel.version, strings.Join(tags, ", ")))
		var variants []matrix.TorchVariant
		for _, tag := range tags {
			v, err := o.torchVariant(ctx, db, ov, rel, tag)
			if err != nil {
				return err
			}
			variants = append(variants, v)
		}
		if have != nil {
			row := *have
			row.Variants = append(slices.Clone(have.Variants), variants...)
			row.Notes = append(slices.Clone(have.Notes), fmt.Sprintf("variants %s added by gpuimg matrix update from %s (read %s); the rest of the row is the matrix's own", strings.Join(tags, ", "), page, ov.Date))
			rows = append(rows, row)
			ov.Found = append(ov.Found, Finding{Source: SourceTorch, What: fmt.Sprintf("torch %s: new variants %s", rel.version, strings.Join(tags, ", ")), URL: page})
			continue
		}
		row := matrix.Torch{Version: rel.version, Row: matrix.Row{Source: srcID}}
		name := "torch " + rel.version.String()
		py, pyErr := pythonRange(rel)
		row.Python = py
		row.Variants = variants
		row.Notes = append(row.Notes, fmt.Sprintf("variants, Python range and pins read from %s and each variant's core metadata (PEP 658) on %s", page, ov.Date))
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: "released", Reason: "the simple index page gives no release date; take it from the GitHub release"})
		for _, c := range []string{"torchvision", "torchaudio"} {
			ver, note, err := comp.find(ctx, c, rel.version, tags)
			if err != nil {
				return err
			}
			if ver == "" {
				ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: c, Reason: note})
				continue
			}
			if c == "torchvision" {
				row.Torchvision = ver
			} else {
				row.Torchaudio = ver
			}
			row.Notes = append(row.Notes, note)
		}
		ov.Found = append(ov.Found, Finding{Source: SourceTorch, What: fmt.Sprintf("%s (%s)", name, strings.Join(tags, ", ")), URL: page})
		if pyErr != nil {
			ov.Incomplete = append(ov.Incomplete, Incomplete{Source: SourceTorch, Row: name, Reason: pyErr.Error(), File: matrix.File{Torch: []matrix.Torch{row}}})
			continue
		}
		rows = append(rows, row)
	}
	if len(rows) > 0 {
		ov.File.Torch = append(ov.File.Torch, rows...)
		if slices.ContainsFunc(rows, func(t matrix.Torch) bool { return t.Source == srcID }) || slices.ContainsFunc(ov.Incomplete, func(i Incomplete) bool { return i.Source == SourceTorch }) {
			ov.File.Sources = append(ov.File.Sources, matrix.Source{ID: srcID, URL: page, Retrieved: ov.Date,
				Title: "PyTorch all-variants wheel index (PEP 503) and each wheel's core metadata (PEP 658/714), read by gpuimg matrix update"})
		}
	}
	o.progress(SourceTorch, fmt.Sprintf("%d torch rows new or extended", len(rows)))
	return nil
}

// readTorchPage returns the final releases with CUDA wheels on a project
// page, oldest first.
func (o *options) readTorchPage(ctx context.Context, page string) ([]torchRelease, error) {
	body, err := o.get(ctx, page, "text/html")
	if err != nil {
		return nil, err
	}
	wheels, skipped, err := parseSimplePage(page, body)
	if err != nil {
		return nil, err
	}
	o.warnSkipped(SourceTorch, page, skipped)
	byVersion := map[string]*torchRelease{}
	for _, w := range wheels {
		if _, ok := cudaOfLocal(w.Local); !ok || !w.final() || !w.linux() {
			continue
		}
		r := byVersion[w.Version]
		if r == nil {
			v, err := matrix.ParseVersion(w.Version)
			if err != nil { // a final release the matrix cannot hold (1.2.3.4.5)
				o.warnSkipped(SourceTorch, page, []string{fmt.Sprintf("wheel %s: %v", w.Filename, err)})
				continue
			}
			r = &torchRelease{version: v, variants: map[string][]wheel{}}
			byVersion[w.Version] = r
		}
		r.variants[w.Local] = append(r.variants[w.Local], w)
	}
	var out []torchRelease
	for _, r := range byVersion {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b torchRelease) int { return a.version.Compare(b.version) })
	return out, nil
}

// maxWarned bounds the skipped links named on one page; the rest are
// counted.
const maxWarned = 5

// warnSkipped reports the links of page that were skipped, as warnings on
// the progress lines.
func (o *options) warnSkipped(src Source, page string, skipped []string) {
	for i, s := range skipped {
		if i == maxWarned {
			o.progress(src, fmt.Sprintf("warning: %s: %d more links skipped", page, len(skipped)-maxWarned))
			return
		}
		o.progress(src, fmt.Sprintf("warning: %s: skipped %s", page, s))
	}
}

// wheelEnv is the target a wheel installs on, for its Requires-Dist
// markers: Linux, the wheel's machine and its CPython (cp312 → 3.12);
// what the tags do not say is unknown.
func wheelEnv(w wheel) pep508.Env {
	machine := ""
	switch {
	case w.x8664():
		machine = "x86_64"
	case w.linux() && strings.HasSuffix(w.Platform, "_aarch64"):
		machine = "aarch64"
	}
	py := ""
	if m := cpythonRE.FindStringSubmatch(w.Python); m != nil {
		py = "3." + m[1]
	}
	return pep508.LinuxEnv(machine, py)
}

// pickWheel is the wheel whose metadata stands for a variant: Linux
// x86_64 (the platform the matrix's pins describe), newest CPython.
func pickWheel(ws []wheel) wheel {
	best := ws[0]
	score := func(w wheel) (int, int) {
		x := 0
		if w.x8664() {
			x = 1
		}
		n := 0
		if m := cpythonRE.FindStringSubmatch(w.Python); m != nil && !strings.HasSuffix(w.Python, "t") {
			n, _ = strconv.Atoi(m[1])
		}
		return x, n
	}
	for _, w := range ws[1:] {
		bx, bn := score(best)
		wx, wn := score(w)
		if cmp.Or(cmp.Compare(wx, bx), cmp.Compare(wn, bn)) > 0 {
			best = w
		}
	}
	return best
}

// torchVariant reads one variant's pins from its wheel's core metadata.
func (o *options) torchVariant(ctx context.Context, db *matrix.DB, ov *Overlay, rel torchRelease, tag string) (matrix.TorchVariant, error) {
	cuda, _ := cudaOfLocal(tag)
	w := pickWheel(rel.variants[tag])
	name := fmt.Sprintf("torch %s %s", rel.version, tag)
	v := matrix.TorchVariant{CUDA: cuda, Status: "experimental", IndexURL: o.torchURL + "/" + tag}
	var md metadata
	if w.Metadata {
		var err error
		if md, err = o.readMetadata(ctx, w); err != nil {
			return matrix.TorchVariant{}, err
		}
		v.Notes = append(v.Notes, "pins read from "+w.MetadataURL())
	}
	pins := map[string]string{}
	for _, line := range md.RequiresDist {
		r, err := parseRequirement(line)
		if err != nil {
			return matrix.TorchVariant{}, &FormatError{URL: w.MetadataURL(), Err: err}
		}
		if ok, err := o.holds(SourceTorch, w.MetadataURL(), r, wheelEnv(w), ""); err != nil {
			return matrix.TorchVariant{}, err
		} else if !ok {
			continue
		}
		for _, lib := range []string{"cudnn", "nccl"} {
			if strings.HasPrefix(r.Name, "nvidia-"+lib+"-cu") && r.pin() != "" {
				pins[lib] = r.pin()
			}
		}
		if p, ok := exactPin(r); ok {
			v.Pins = append(v.Pins, p)
		}
		if t := tritonReq(r); t != "" {
			v.Triton = t
		}
	}
	for lib, field := range map[string]*matrix.Version{"cudnn": &v.CuDNN, "nccl": &v.NCCL} {
		p, ok := pins[lib]
		if !ok {
			reason := "the wheel's metadata pins no nvidia-" + lib + " wheel (the library is inside the wheel); read it from the wheel or the release notes"
			if !w.Metadata {
				reason = "the index page offers no core metadata (PEP 658) for " + w.Filename + ", and gpuimg does not download wheels"
			}
			ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: lib, Reason: reason})
			continue
		}
		pv, err := matrix.ParseVersion(p)
		if err != nil {
			return matrix.TorchVariant{}, &FormatError{URL: w.MetadataURL(), Err: fmt.Errorf("nvidia-%s pin: %w", lib, err)}
		}
		*field = pv
	}
	ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: "status", Reason: "stable/experimental is not machine-readable; written as experimental until a maintainer confirms it against RELEASE.md"})
	v.Notes = append(v.Notes, "status: experimental until confirmed (the index does not say which variants are stable)")
	// Compiled architectures are only in the wheel's device code: read
	// them from libtorch_cuda.so by range requests when a scanner is set,
	// else the nearest older release's list for the same CUDA stands in,
	// with a note.
	if o.archs != nil {
		o.progress(SourceTorch, fmt.Sprintf("%s: reading %s from %s by range requests", name, libtorchCUDA, w.URL))
		sass, ptx, fetched, err := o.wheelArchs(ctx, w.URL)
		if err != nil {
			return matrix.TorchVariant{}, err
		}
		v.Archs, v.PTX = sass, ptx
		v.Notes = append(v.Notes, fmt.Sprintf("archs/ptx read from %s in %s by the fat-binary scanner (%d bytes fetched by HTTP range requests)", libtorchCUDA, w.URL, fetched))
		return v, nil
	}
	if from, ok := nearestArchs(db, rel.version, cuda); ok {
		v.Archs, v.PTX = slices.Clone(from.v.Archs), slices.Clone(from.v.PTX)
		v.Notes = append(v.Notes, fmt.Sprintf("archs/ptx copied from torch %s cu%s (not read from this wheel); confirm with the fat-binary scanner", from.version, tag[2:]))
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: "archs", Reason: fmt.Sprintf("copied from torch %s %s; the compiled list is only in the wheel's libtorch_cuda.so (read it with --wheel-archs)", from.version, tag)})
	} else {
		ov.Unfilled = append(ov.Unfilled, Unfilled{Source: SourceTorch, Row: name, Field: "archs", Reason: "no older release has a " + tag + " variant to copy from; the compiled list is only in the wheel's libtorch_cuda.so (read it with --wheel-archs)"})
	}
	return v, nil
}

type archSource struct {
	version matrix.Version
	v       matrix.TorchVariant
}

// nearestArchs finds the newest release older than v with a variant for
// the same CUDA (major.minor) that records its archs.
func nearestArchs(db *matrix.DB, v, cuda matrix.Version) (archSource, bool) {
	var best archSource
	found := false
	for _, t := range db.Torch {
		if !t.Version.Less(v) || (found && !best.version.Less(t.Version)) {
			continue
		}
		for _, tv := range t.Variants {
			if tv.CUDA.Trunc(2).Compare(cuda.Trunc(2)) == 0 && len(tv.Archs) > 0 {
				best, found = archSource{version: t.Version, v: tv}, true
			}
		}
	}
	return best, found
}

// pythonRange is the CPython range of a release's CUDA wheels (cp310 …
// cp313t give >=3.10,<3.14).
func pythonRange(rel torchRelease) (matrix.Constraint, error) {
	lo, hi := -1, -1
	for _, ws := range rel.variants {
		for _, w := range ws {
			m := cpythonRE.FindStringSubmatch(w.Python)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if lo < 0 || n < lo {
				lo = n
			}
			if n > hi {
				hi = n
			}
		}
	}
	if lo < 0 {
		return matrix.Constraint{}, fmt.Errorf("python cannot be filled: no CPython (cpXY) wheel for torch %s", rel.version)
	}
	return matrix.ParseConstraint(fmt.Sprintf(">=3.%d,<3.%d", lo, hi+1))
}

// companions finds torchvision/torchaudio releases for a torch release,
// reading each project page once.
type companions struct {
	o     *options
	pages map[string][]torchRelease
}

// maxCompanionTries bounds the metadata files read per companion.
const maxCompanionTries = 6

// find returns the newest release of project c that has a wheel for one
// of torch's new variants and whose core metadata pins torch==version.
// The note says where it was read, or why nothing was found.
func (c *companions) find(ctx context.Context, project string, version matrix.Version, tags []string) (string, string, error) {
	page := c.o.torchURL + "/" + project + "/"
	if c.pages == nil {
		c.pages = map[string][]torchRelease{}
	}
	rels, ok := c.pages[project]
	if !ok {
		c.o.progress(SourceTorch, "reading "+page)
		var err error
		if rels, err = c.o.readTorchPage(ctx, page); err != nil {
			return "", "", err
		}
		c.pages[project] = rels
	}
	tries := 0
	for i := len(rels) - 1; i >= 0 && tries < maxCompanionTries; i-- {
		for _, tag := range tags {
			ws, ok := rels[i].variants[tag]
			if !ok {
				continue
			}
			w := pickWheel(ws)
			if !w.Metadata {
				continue
			}
			tries++
			md, err := c.o.readMetadata(ctx, w)
			if err != nil {
				return "", "", err
			}
			for _, line := range md.RequiresDist {
				r, err := parseRequirement(line)
				if err != nil {
					return "", "", &FormatError{URL: w.MetadataURL(), Err: err}
				}
				if r.Name == "torch" && r.pin() == version.String() {
					return rels[i].version.String(), fmt.Sprintf("%s %s: its %s wheel's metadata pins torch==%s (%s)", project, rels[i].version, tag, version, w.MetadataURL()), nil
				}
			}
			break
		}
	}
	return "", fmt.Sprintf("no %s wheel for %s among the newest on %s pins torch==%s", project, strings.Join(tags, "/"), page, version), nil
}
