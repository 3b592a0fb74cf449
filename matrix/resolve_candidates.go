package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// fwChoice is one framework at one version and wheel variant.
type fwChoice struct {
	name     string // torch, tensorflow, jax
	version  Version
	cuda     Version // major.minor the wheels were built for
	cudnn    Version // bundled or required cuDNN (exact pin for torch)
	cudnnMin bool    // cudnn is a minimum, not a pin (jax)
	nccl     Version
	python   Constraint
	status   string
	pypi     bool // PyPI's default variant of the release
	archs    []string
	ptx      []string
	minDrv   Version      // documented driver floor (jax)
	sysLibs  bool         // needs CUDA/cuDNN from the base image (tensorflow < 2.14)
	pins     []Pin        // exact pins of what pip installs (Requires-Dist, the CUDA extra)
	ranges   []WheelRange // version ranges of what pip installs (jax's plugin extras)
	// pinsPartial: pins holds only the cuDNN and NCCL pins (torchPins).
	pinsPartial bool
	unserved    []Unserved
	pipAs       string // the release pip installs, when not version (2.15.0.post1)
	fw          Framework
	source      string
	notes       []string
	// siblings are the release's wheel variants (this one included), for
	// saying why this one was chosen.
	siblings []variantFacts
}

// variantFacts are what the variant rule weighs of a wheel variant.
type variantFacts struct {
	cuda   Version // major.minor
	status string  // stable, experimental or empty
	pypi   bool
}

// frameworkChoices lists a framework's releases that match want, newest
// first, each with its wheel variants in preference order.
func (db *DB) frameworkChoices(name string, want *Constraint) ([]fwChoice, error) {
	var out, all []fwChoice
	var known []string
	switch name {
	case FrameworkTorch:
		for _, t := range db.Torch {
			known = append(known, t.Version.String())
			var siblings []variantFacts
			for _, v := range t.Variants {
				siblings = append(siblings, variantFacts{cuda: v.CUDA.Trunc(2), status: v.Status, pypi: v.PyPI})
			}
			variants := slices.Clone(t.Variants)
			slices.SortStableFunc(variants, func(a, b TorchVariant) int {
				if (a.Status == "stable") != (b.Status == "stable") {
					if a.Status == "stable" {
						return -1
					}
					return 1
				}
				return b.CUDA.Compare(a.CUDA)
			})
			for _, v := range variants {
				ch := fwChoice{name: name, version: t.Version, cuda: v.CUDA.Trunc(2), cudnn: v.CuDNN, nccl: v.NCCL,
					python: t.Python, status: v.Status, pypi: v.PyPI, archs: v.Archs, ptx: v.PTX, pins: v.Pins, source: t.Source, notes: v.Notes, siblings: siblings}
				ch.pins, ch.pinsPartial = torchPins(v)
				idx := v.IndexURL
				if idx == "" {
					idx = "https://download.pytorch.org/whl/cu" + CUDATag(v.CUDA)
				}
				pkgs := []string{"torch==" + t.Version.String()}
				if t.Torchvision != "" {
					pkgs = append(pkgs, "torchvision=="+t.Torchvision)
				}
				if t.Torchaudio != "" {
					pkgs = append(pkgs, "torchaudio=="+t.Torchaudio)
				}
				ch.fw = Framework{Version: t.Version.String(), CUDA: ch.cuda.String(), CuDNN: v.CuDNN.String(), NCCL: v.NCCL.String(),
					Status: v.Status, IndexURL: idx, Packages: pkgs, Archs: v.Archs, PTX: v.PTX}
				all = append(all, ch)
			}
		}
	case FrameworkTensorFlow:
		andCUDA := MustVersion("2.14")
		for _, t := range db.TensorFlow {
			known = append(known, t.Version.String())
			ch := fwChoice{name: name, version: t.Version, cuda: t.CUDA.Trunc(2), cudnn: t.CuDNN, python: t.Python, source: t.Source}
			pip := t.Version.String()
			if t.PipVersion != "" {
				pip, ch.pipAs = t.PipVersion, t.PipVersion
			}
			pkg := "tensorflow[and-cuda]==" + pip
			if t.Version.Less(andCUDA) {
				ch.sysLibs = true
				pkg = "tensorflow==" + pip
			} else {
				// The and-cuda extra's pins are what pip installs beside
				// tensorflow; without the extra there are none.
				ch.pins, ch.unserved = t.Pins, t.Unserved
			}
			ch.fw = Framework{Version: t.Version.String(), CUDA: ch.cuda.String(), CuDNN: t.CuDNN.String(), Packages: []string{pkg}}
			all = append(all, ch)
		}
	case FrameworkJAX:
		for _, j := range db.JAX {
			known = append(known, j.Version.String())
			var siblings []variantFacts
			for _, v := range j.Variants {
				if !strings.Contains(v.Extra, "local") {
					siblings = append(siblings, variantFacts{cuda: v.MinCUDA.Trunc(2)})
				}
			}
			variants := slices.Clone(j.Variants)
			slices.SortStableFunc(variants, func(a, b JAXVariant) int { return b.CUDA.Compare(a.CUDA) })
			for _, v := range variants {
				if strings.Contains(v.Extra, "local") {
					continue // -local extras use the image's CUDA; gpuimg installs the pip wheels
				}
				ch := fwChoice{name: name, version: j.Version, cuda: v.MinCUDA.Trunc(2), cudnn: v.MinCuDNN, cudnnMin: true,
					python: j.Python, minDrv: v.MinDriver, source: j.Source, notes: v.Notes, siblings: siblings, ranges: v.Requires}
				cudnn := ""
				if !v.MinCuDNN.IsZero() {
					cudnn = ">=" + v.MinCuDNN.String()
				}
				pkgs := []string{fmt.Sprintf("jax[%s]==%s", v.Extra, j.Version)}
				if !v.CuDNNBelow.IsZero() {
					cudnn += ",<" + v.CuDNNBelow.String()
					pkgs = append(pkgs, fmt.Sprintf("nvidia-cudnn-cu%d<%s", v.CUDA.Major(), v.CuDNNBelow))
				}
				ch.fw = Framework{Version: j.Version.String(), CUDA: ch.cuda.String(), CuDNN: cudnn, FindLinks: v.FindLinks, Packages: pkgs}
				all = append(all, ch)
			}
		}
	}
	for _, ch := range all {
		if want.Check(ch.version) {
			out = append(out, ch)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s release matches %q; known: %s (add rows with --matrix-file)", name, want.String(), strings.Join(known, ", "))
	}
	return out, nil
}

// product returns every combination of one element of each list (one
// choice per framework), in lexicographic preference order.
func product[T any](lists [][]T) [][]T {
	out := [][]T{nil}
	for _, l := range lists {
		var next [][]T
		for _, prefix := range out {
			for _, ch := range l {
				next = append(next, append(slices.Clone(prefix), ch))
			}
		}
		out = next
	}
	return out
}

// orderCUDA orders candidate image CUDA releases when no CUDA is
// requested: the release closest to the wheels' CUDA comes first (the same
// minor's newest patch, then the next minors up), which keeps the driver
// floor as low as the frameworks allow; with no frameworks, newest first.
func orderCUDA(cudas []CUDARelease, combo []fwChoice) []CUDARelease {
	if len(combo) == 0 {
		return cudas
	}
	target := combo[0].cuda
	for _, ch := range combo[1:] {
		if target.Less(ch.cuda) {
			target = ch.cuda
		}
	}
	var above, below []CUDARelease
	for _, r := range cudas {
		if r.Version.Trunc(2).Compare(target) >= 0 {
			above = append(above, r)
		} else {
			below = append(below, r)
		}
	}
	// above is newest first; walk its minors from the lowest up, keeping
	// each minor's patches newest first.
	var out []CUDARelease
	for i := len(above) - 1; i >= 0; {
		mm := above[i].Version.Trunc(2)
		j := i
		for j >= 0 && above[j].Version.HasPrefix(mm) {
			j--
		}
		out = append(out, above[j+1:i+1]...)
		i = j
	}
	return append(out, below...)
}

// byRelease splits a framework's choices into its releases, each with its
// variants in preference order.
func byRelease(l []fwChoice) [][]fwChoice {
	var out [][]fwChoice
	for i, ch := range l {
		if i == 0 || ch.version.Compare(l[i-1].version) != 0 {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], ch)
	}
	return out
}

// The variant rule when the user names a CUDA version: a wheel variant
// built for the image's CUDA major.minor comes first, then the nearest
// older minor of the same major (minor-version compatibility runs it);
// upstream's stable label and then PyPI's default variant only break ties
// among variants equally close; the preference without a requested CUDA
// (stable first, newest CUDA first) breaks the rest. Variants of another
// major or a newer minor cannot run on the image and come last.

// variantDistance is how far variant cuda (x.y) is from image CUDA mm
// (x.y): the number of minors it is older, or -1 when the image cannot
// run it.
func variantDistance(cuda, mm Version) int {
	if !FitWheel(cuda, mm).Runs() {
		return -1
	}
	return mm.Minor() - cuda.Minor()
}

// compareForCUDA orders two variants for an image with CUDA mm (x.y).
func compareForCUDA(a, b variantFacts, mm Version) int {
	da, dB := variantDistance(a.cuda, mm), variantDistance(b.cuda, mm)
	switch {
	case da != dB && da < 0:
		return 1
	case da != dB && dB < 0:
		return -1
	case da != dB:
		return da - dB
	case (a.status == "experimental") != (b.status == "experimental"):
		if a.status == "experimental" {
			return 1
		}
		return -1
	case a.pypi != b.pypi:
		if a.pypi {
			return -1
		}
		return 1
	}
	return 0
}

func (ch fwChoice) facts() variantFacts {
	return variantFacts{cuda: ch.cuda, status: ch.status, pypi: ch.pypi}
}

// orderForCUDA orders combinations of variants of the same releases for an
// image with CUDA cuda, by the variant rule, framework by framework.
func orderForCUDA(combos [][]fwChoice, cuda Version) [][]fwChoice {
	mm := cuda.Trunc(2)
	out := slices.Clone(combos)
	slices.SortStableFunc(out, func(a, b []fwChoice) int {
		for i := range a {
			if c := compareForCUDA(a[i].facts(), b[i].facts(), mm); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// label names the choice in messages: "torch 2.3.1 cu121", "tensorflow
// 2.15.0".
func (ch fwChoice) label() string {
	if len(ch.siblings) > 1 {
		return fmt.Sprintf("%s %s cu%s", ch.name, ch.version, CUDATag(ch.cuda))
	}
	return fmt.Sprintf("%s %s", ch.name, ch.version)
}

// torchPins are a torch variant's exact pins: its pins: list, else, for a
// variant whose nccl was read from its nvidia-nccl-cuNN wheel pin (so the
// wheel installs NVIDIA's libraries from pip), the nvidia-cudnn-cuNN and
// nvidia-nccl-cuNN pins its cudnn and nccl record. partial says the other
// nvidia-* pins are unknown.
func torchPins(v TorchVariant) (pins []Pin, partial bool) {
	if len(v.Pins) > 0 || v.NCCL.IsZero() || v.CuDNN.IsZero() {
		return v.Pins, false
	}
	m := v.CUDA.Major()
	return []Pin{
		{Name: fmt.Sprintf("nvidia-cudnn-cu%d", m), Version: v.CuDNN, Raw: v.CuDNN.String()},
		{Name: fmt.Sprintf("nvidia-nccl-cu%d", m), Version: v.NCCL, Raw: v.NCCL.String()},
	}, true
}
