package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// CUDAToolkitWheel is one release of NVIDIA's cuda-toolkit metapackage on
// PyPI, which CUDA 13 framework wheels pin instead of each library:
// torch's METADATA asks for cuda-toolkit[cublas,cudart,...]==13.0.2, and
// each extra of that release pins one suffix-less component wheel
// (cublas: nvidia-cublas==13.1.0.3.*). Comparing such a framework's pins
// with another's needs these component pins (DB.ComparePins).
type CUDAToolkitWheel struct {
	// Version is the release as its pins name it (13.0.2).
	Version string `yaml:"version" json:"version"`
	// Extras maps each extra to the component pin it adds. An extra that
	// adds a range, not a pin, is left out and named in the row's notes.
	Extras map[string]Pin `yaml:"extras" json:"extras"`
	Row    `yaml:",inline"`
}

// toolkitName is the distribution name of the metapackage.
const toolkitName = "cuda-toolkit"

// toolkitWheel finds the recorded release a cuda-toolkit pin asks for.
func (db *DB) toolkitWheel(p Pin) (CUDAToolkitWheel, bool) {
	for _, w := range db.CUDAToolkitWheels {
		if p.Same(Pin{Name: toolkitName, Raw: w.Version}) {
			return w, true
		}
	}
	return CUDAToolkitWheel{}, false
}

// componentOf names the distribution a cuda-toolkit extra installs, as
// the recorded releases spell it (cudart: nvidia-cuda-runtime); "" when
// no recorded release has the extra.
func (db *DB) componentOf(extra string) string {
	for _, w := range db.CUDAToolkitWheels {
		if p, ok := w.Extras[extra]; ok {
			return p.Name
		}
	}
	return ""
}

// Unexpanded is a cuda-toolkit pin, or one of its extras, whose component
// pins the matrix does not record: pins of the same components by another
// framework could not be compared with it.
type Unexpanded struct {
	Pin Pin
	// Extras are the extras whose component pins are unknown.
	Extras []string
	// Why says what is missing.
	Why string
}

// ExpandPins returns pins with each cuda-toolkit[extras]==V pin followed
// by the component pins its extras add in release V (the metapackage's
// own pin is kept), and the cuda-toolkit pins or extras it could not
// expand because the matrix lacks their component pins.
func (db *DB) ExpandPins(pins []Pin) ([]Pin, []Unexpanded) {
	var out []Pin
	var open []Unexpanded
	for _, p := range pins {
		out = append(out, p)
		if p.Name != toolkitName || len(p.Extras) == 0 {
			continue
		}
		w, ok := db.toolkitWheel(p)
		if !ok {
			open = append(open, Unexpanded{Pin: p, Extras: p.Extras,
				Why: fmt.Sprintf("the matrix does not record the component pins of cuda-toolkit %s (add a cuda_toolkit_wheels row with a --matrix-file)", p.Raw)})
			continue
		}
		var missing []string
		for _, e := range p.Extras {
			if c, ok := w.Extras[e]; ok && !slices.ContainsFunc(out, func(q Pin) bool { return q.Name == c.Name }) {
				out = append(out, c)
			} else if !ok {
				missing = append(missing, e)
			}
		}
		if len(missing) > 0 {
			open = append(open, Unexpanded{Pin: p, Extras: missing,
				Why: fmt.Sprintf("cuda-toolkit %s's extra %s pins no single version in the matrix (a range, or not recorded)", p.Raw, strings.Join(missing, ", "))})
		}
	}
	return out, open
}

// PinComparison is what DB.ComparePins found of two frameworks' pins.
type PinComparison struct {
	// Conflicts are packages both pin to different versions: pip cannot
	// install the two in one environment.
	Conflicts []PinConflict
	// NotCompared says, for each component both may pin but whose
	// version one side leaves to an unrecorded cuda-toolkit release, why
	// it was not compared: "nvidia-cublas: the matrix does not record ...".
	NotCompared []string
}

// ComparePins is the one rule for two frameworks sharing an environment,
// in the shape of CUDA 13 wheels too: each side's cuda-toolkit pins are
// expanded into the component pins their extras add (ExpandPins), then
// every package both pin is compared (PinConflicts). Suffix-less
// component names (nvidia-cublas) and the suffixed names of earlier
// majors (nvidia-cublas-cu12) are different distributions and never
// conflict by name; cuDNN, NCCL, cuSPARSELt and NVSHMEM keep their -cu13
// suffix. Where a side's toolkit release is not recorded and the other
// side pins one of its components (or another toolkit release), the
// component is listed in NotCompared, never passed silently.
func (db *DB) ComparePins(a, b []Pin) PinComparison {
	ea, openA := db.ExpandPins(a)
	eb, openB := db.ExpandPins(b)
	out := PinComparison{Conflicts: PinConflicts(ea, eb)}
	out.NotCompared = append(db.notCompared(openA, eb), db.notCompared(openB, ea)...)
	return out
}

// notCompared lists the components of open toolkit pins that other pins.
func (db *DB) notCompared(open []Unexpanded, other []Pin) []string {
	var out []string
	for _, u := range open {
		for _, e := range u.Extras {
			c := db.componentOf(e)
			i := slices.IndexFunc(other, func(q Pin) bool { return c != "" && q.Name == c })
			if i < 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s (%s against %s): %s", c, u.Pin, other[i], u.Why))
		}
	}
	return out
}

// PinsAgainstRanges is PinsOutside after expanding pins' cuda-toolkit
// pins into their component pins: torch's cuda-toolkit[cublas]==13.0.3
// is judged as nvidia-cublas==13.1.1.3.* against a range on nvidia-cublas.
func (db *DB) PinsAgainstRanges(pins []Pin, ranges []WheelRange) []PinConflict {
	expanded, _ := db.ExpandPins(pins)
	return PinsOutside(expanded, ranges)
}

// LibraryWheels names the pip distributions that carry a CUDA library's
// shared objects, newest shape last, for readers of an installed
// environment: the -cu11 and -cu12 wheels, and for CUDA 13 the -cu13
// wheels of cuDNN and NCCL (they keep the suffix) or the suffix-less
// component wheels (nvidia-cublas, nvidia-cuda-runtime; NVIDIA's -cu13
// names of those are deprecation stubs). lib is the name inside the
// distribution name: cudnn, nccl, cublas, cuda-runtime.
func LibraryWheels(lib string) []string {
	out := []string{"nvidia-" + lib + "-cu11", "nvidia-" + lib + "-cu12", "nvidia-" + lib + "-cu13"}
	switch lib {
	case "cudnn", "nccl", "cusparselt", "nvshmem":
	default:
		out = append(out, "nvidia-"+lib)
	}
	return out
}
