package matrix

import (
	"fmt"
	"sort"
	"strings"
)

// Status is the outcome of one check.
type Status string

// Check outcomes.
const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Finding is the result of one compatibility check.
type Finding struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// Target is a host a stack should run on. Zero fields are not checked.
type Target struct {
	Driver Version
	GPU    string
}

// CheckStack says whether stack s runs on target t, one finding per
// question: the driver against the strict and compatibility floors, and
// the GPU against the toolkit's and each framework's architectures.
func (db *DB) CheckStack(s Stack, t Target) ([]Finding, error) {
	var out []Finding
	add := func(name string, st Status, format string, args ...any) {
		out = append(out, Finding{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	cuda, err := ParseVersion(s.CUDA)
	if err != nil {
		return nil, fmt.Errorf("stack has a bad cuda %q: %w", s.CUDA, err)
	}
	usesCompat := false
	if !t.Driver.IsZero() {
		strict, err1 := ParseVersion(s.MinDriver)
		compat, err2 := ParseVersion(s.MinDriverCompat)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("stack has no driver floor (min_driver %q, min_driver_compat %q)", s.MinDriver, s.MinDriverCompat)
		}
		switch {
		case t.Driver.Compare(strict) >= 0:
			add("driver", Pass, "driver %s meets the stack's floor %s (CUDA %s)", t.Driver, strict, cuda)
		case t.Driver.Compare(compat) >= 0:
			usesCompat = true
			add("driver", Warn, "driver %s is below the strict floor %s but meets the minor-version-compatibility floor %s: CUDA works, PTX JIT does not, and APIs newer than the driver fail", t.Driver, strict, compat)
			if req := s.RequireCUDA; req != "" && !strings.HasSuffix(req, ".0") {
				add("require_cuda", Fail, "the image's NVIDIA_REQUIRE_CUDA=%s makes the NVIDIA container runtime refuse driver %s; rebuild with --driver %s --compat, or set NVIDIA_DISABLE_REQUIRE=1", req, t.Driver, t.Driver)
			}
		default:
			add("driver", Fail, "driver %s is below the stack's floor %s (%s under minor-version compatibility); upgrade the driver or pick an older CUDA (gpuimg matrix resolve --driver %s)", t.Driver, strict, compat, t.Driver)
		}
	}
	if t.GPU != "" {
		g, err := db.FindGPU(t.GPU)
		if err != nil {
			return nil, err
		}
		a, ok := db.Arch(g.Arch)
		if !ok {
			return nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know", g.Name, g.Arch)
		}
		switch a.TargetedBy(cuda) {
		case ArchTooNew:
			add("gpu/cuda", Fail, "CUDA %s predates %s (%s): support starts with CUDA %s", cuda, g.Arch, a.Name, a.AddedIn)
		case ArchDropped:
			add("gpu/cuda", Fail, "CUDA %s no longer supports %s (%s): support ended in CUDA %s", cuda, g.Arch, a.Name, a.RemovedIn)
		default:
			add("gpu/cuda", Pass, "CUDA %s supports %s (%s, %s)", cuda, g.Name, g.Arch, a.Name)
		}
		names := make([]string, 0, len(s.Frameworks))
		for n := range s.Frameworks {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fw := s.Frameworks[n]
			check := "gpu/" + n
			if len(fw.Archs) == 0 {
				add(check, Warn, "the matrix does not record which architectures %s %s was compiled for; gpuimg validate reads them from the image", n, fw.Version)
				continue
			}
			native, jit := archCovered(g.Arch, fw.Archs, fw.PTX)
			switch {
			case native:
				add(check, Pass, "%s %s has native kernels for %s", n, fw.Version, g.Arch)
			case jit && !usesCompat:
				add(check, Warn, "%s %s has no native kernels for %s; PTX (%s) is JIT-compiled on first use", n, fw.Version, g.Arch, strings.Join(fw.PTX, ", "))
			case jit:
				add(check, Fail, "%s %s has only PTX for %s, and PTX cannot be JIT-compiled under minor-version compatibility; upgrade the driver to %s", n, fw.Version, g.Arch, s.MinDriver)
			default:
				add(check, Fail, "%s %s has no kernels for %s (%s): it was compiled for %s", n, fw.Version, g.Name, g.Arch, strings.Join(fw.Archs, ", "))
			}
		}
	}
	return out, nil
}

// Verdict is Fail if any finding failed, else Pass.
func Verdict(fs []Finding) Status {
	for _, f := range fs {
		if f.Status == Fail {
			return Fail
		}
	}
	return Pass
}
