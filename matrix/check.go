package matrix

import (
	"fmt"
	"strings"

	"github.com/gpuimg/gpuimg/internal/bound"
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

// Host is a machine a stack should run on. Zero fields are not checked.
type Host struct {
	Driver Version
	GPU    string
}

// CheckStack says whether stack s runs on target t, one finding per
// question: the driver against the strict and compatibility floors, the
// stack's NVIDIA_REQUIRE_CUDA against the driver as the NVIDIA container
// runtime judges it (JudgeRuntime), the driver against the branches that
// know the GPU (JudgeGPUDriver), and the GPU against the toolkit's and
// each framework's architectures.
func (db *DB) CheckStack(s Stack, t Host) ([]Finding, error) {
	var out []Finding
	add := func(name string, st Status, format string, args ...any) {
		out = append(out, Finding{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
	cuda, err := ParseVersion(s.CUDA)
	if err != nil {
		return nil, fmt.Errorf("stack has a bad cuda %s: %w", bound.Quote(s.CUDA), err)
	}
	var gpus []GPU
	var g GPU
	if t.GPU != "" {
		if g, err = db.FindGPU(t.GPU); err != nil {
			return nil, err
		}
		gpus = []GPU{g}
	}
	usesCompat := false
	if !t.Driver.IsZero() {
		floors, err := s.DriverFloors()
		if err != nil {
			return nil, err
		}
		out = append(out, floors.Judge("driver", t.Driver))
		usesCompat = floors.Fit(t.Driver) == DriverCompatOnly
		out = append(out, db.JudgeRuntime("require_cuda", map[string]string{"NVIDIA_REQUIRE_CUDA": s.RequireCUDA}, t.Driver, gpus))
		for _, g := range gpus {
			if f, ok := db.JudgeGPUDriver("gpu/driver", g, t.Driver); ok {
				out = append(out, f)
			}
		}
	}
	if t.GPU != "" {
		a, ok := db.Arch(g.Arch)
		if !ok {
			return nil, fmt.Errorf("GPU %s has architecture %s, which the matrix does not know", g.Name, g.Arch)
		}
		if err := db.CUDATargets(cuda, g); err != nil {
			add("gpu/cuda", Fail, "%v", err)
		} else {
			add("gpu/cuda", Pass, "CUDA %s supports %s (%s, %s)", cuda, g.Name, g.Arch, a.Name)
		}
		for _, fw := range s.FrameworkList() {
			check := "gpu/" + fw.Name
			if len(fw.Archs) == 0 {
				add(check, Warn, "the matrix does not record which architectures %s %s was compiled for; gpuimg validate reads them from the image", fw.Name, fw.Version)
				continue
			}
			cov := KernelCoverage(g.Arch, fw.Archs, fw.PTX)
			switch {
			case cov == Native:
				add(check, Pass, "%s %s has native kernels for %s", fw.Name, fw.Version, g.Arch)
			case cov.Runs(usesCompat):
				add(check, Warn, "%s %s has no native kernels for %s; PTX (%s) is JIT-compiled on first use", fw.Name, fw.Version, g.Arch, strings.Join(fw.PTX, ", "))
			case cov == ViaPTX:
				add(check, Fail, "%s %s has only PTX for %s, and PTX cannot be JIT-compiled under minor-version compatibility; upgrade the driver to %s", fw.Name, fw.Version, g.Arch, s.MinDriver)
			default:
				add(check, Fail, "%s %s has no kernels for %s (%s): it was compiled for %s", fw.Name, fw.Version, g.Name, g.Arch, strings.Join(fw.Archs, ", "))
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
