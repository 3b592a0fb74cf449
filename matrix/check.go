package matrix

import (
	"errors"
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
	// UnknownFact is a question the matrix cannot answer because a fact it
	// needs is not recorded (the architectures a framework release was
	// compiled for, the driver branches that know a GPU). It is never a
	// pass: Verdict ranks it between pass and fail, and StrictVerdict
	// fails it.
	UnknownFact Status = "unknown"
)

// Finding is the result of one compatibility check.
type Finding struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Missing names the fact the matrix lacks, on an UnknownFact finding.
	Missing string `json:"missing,omitempty"`
	// Supply says how to give gpuimg that fact, on an UnknownFact finding.
	Supply string `json:"supply,omitempty"`
}

// UnknownFinding is the UnknownFact finding called name: the matrix does not
// record missing (a fact, "the architectures tensorflow 2.19 was compiled
// for"); supply says how to give it. The message names both, so the text
// output says what the JSON's missing and supply fields say.
func UnknownFinding(name, missing, supply string) Finding {
	return Finding{
		Name:    name,
		Status:  UnknownFact,
		Message: "the matrix does not record " + missing + "; to judge it, " + supply,
		Missing: missing,
		Supply:  supply,
	}
}

// Host is a machine a stack should run on. Zero fields are not checked.
type Host struct {
	Driver Version
	// GPU is a GPU name, alias or architecture, or several separated by
	// commas (a fleet of a100,h100): the stack must run on each.
	GPU string
}

// gpus looks up the host's GPUs, in the order given.
func (db *DB) hostGPUs(t Host) ([]GPU, error) {
	var gpus []GPU
	for _, name := range (Constraints{GPU: t.GPU}).GPUs() {
		g, err := db.FindGPU(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// CheckStack says whether stack s runs on target t, one finding per
// question: the driver against the strict and compatibility floors, the
// stack's NVIDIA_REQUIRE_CUDA against the driver as the NVIDIA container
// runtime judges it (JudgeRuntime), the driver against the branches that
// know each GPU (JudgeGPUDriver), and each GPU against the toolkit's and
// each framework's architectures.
func (db *DB) CheckStack(s Stack, t Host) ([]Finding, error) {
	var out []Finding
	cuda, err := ParseVersion(s.CUDA)
	if err != nil {
		return nil, fmt.Errorf("stack has a bad cuda %s: %w", bound.Quote(s.CUDA), err)
	}
	gpus, err := db.hostGPUs(t)
	if err != nil {
		return nil, err
	}
	usesCompat := false
	if !t.Driver.IsZero() {
		floors, err := s.DriverFloors()
		if err != nil {
			return nil, err
		}
		out = append(out, floors.Judge("driver", t.Driver))
		usesCompat = floors.Fit(t.Driver) == DriverCompatOnly
		out = append(out, db.JudgeRuntime("require_cuda", s.RuntimeEnv(), t.Driver, gpus))
		for _, g := range gpus {
			if f, ok := db.JudgeGPUDriver("gpu/driver", g, t.Driver); ok {
				out = append(out, f)
			}
		}
	}
	for _, g := range gpus {
		fs, err := db.checkGPU(s, cuda, g, usesCompat)
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			if len(gpus) > 1 {
				// gpu/l4/cuda, as validate --target names a fleet's GPUs.
				f.Name = strings.Replace(f.Name, "gpu", "gpu/"+strings.ToLower(g.Name), 1)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// checkGPU judges GPU g against the toolkit's and each framework's
// architectures of stack s (CUDA cuda).
func (db *DB) checkGPU(s Stack, cuda Version, g GPU, usesCompat bool) ([]Finding, error) {
	var out []Finding
	add := func(name string, st Status, format string, args ...any) {
		out = append(out, Finding{Name: name, Status: st, Message: fmt.Sprintf(format, args...)})
	}
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
			out = append(out, UnknownFinding(check,
				fmt.Sprintf("which GPU architectures %s %s was compiled for", fw.Name, fw.Version),
				fmt.Sprintf("give a --matrix-file row for %s %s with archs: (and ptx:), or run gpuimg validate IMAGE --gpu %s on the built image, which reads them from its libraries", fw.Name, fw.Version, g.Arch)))
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
	return out, nil
}

// HostCheck is what CheckConstraints judged: the stack and its findings.
type HostCheck struct {
	Stack    Stack     `json:"stack"`
	Findings []Finding `json:"checks"`
	// Default is the stack the constraints resolve to without the host,
	// when it does not run there and Stack is another one that does; nil
	// otherwise.
	Default *Stack `json:"default_stack,omitempty"`
}

// CheckConstraints resolves c and judges the stack on c's host (c.Driver,
// c.GPU), so that matrix check and matrix resolve give one answer to one
// question. The rule: the stack c resolves to without the host (the one a
// build without --driver and --gpu makes) is judged first; when it runs
// there it is the answer. When it does not, the stack Resolve(c) gives
// with the host as constraints (what matrix resolve prints for the same
// flags) is judged instead, with a warning that names the default and its
// failed checks. When no stack fits the host either, the default's
// findings stand, with a failed "resolve" finding giving the resolver's
// reason. A resolve error without the host is returned as it is. With
// c.Target the host is the target's driver (unless c gives one) and its
// GPUs narrowed by c's (NarrowTarget), as Resolve takes them.
func (db *DB) CheckConstraints(c Constraints) (HostCheck, error) {
	host, err := db.hostOf(c)
	if err != nil {
		return HostCheck{}, err
	}
	bare := c
	bare.Driver, bare.GPU, bare.Compat, bare.Target = Version{}, "", false, ""
	def, err := db.Resolve(bare)
	if err != nil {
		return HostCheck{}, err
	}
	fs, err := db.CheckStack(def, host)
	if err != nil {
		return HostCheck{}, err
	}
	if Verdict(fs) != Fail {
		return HostCheck{Stack: def, Findings: fs}, nil
	}
	fit, err := db.Resolve(c)
	if errors.Is(err, ErrNoStack) {
		fs = append(fs, Finding{Name: "resolve", Status: Fail,
			Message: fmt.Sprintf("no stack with these constraints runs on this host either: %v", err)})
		return HostCheck{Stack: def, Findings: fs}, nil
	}
	if err != nil {
		return HostCheck{}, err
	}
	fitFs, err := db.CheckStack(fit, host)
	if err != nil {
		return HostCheck{}, err
	}
	var failed []string
	for _, f := range fs {
		if f.Status == Fail {
			failed = append(failed, f.Name)
		}
	}
	note := Finding{Name: "stack", Status: Warn, Message: fmt.Sprintf(
		"without the host these constraints resolve to %s, which does not run here (failed: %s); these checks judge %s, the stack gpuimg matrix resolve gives with the host as constraints: build with the same host flags (--driver, --gpu, --target) to get it",
		def.Short(), strings.Join(failed, ", "), fit.Short())}
	return HostCheck{Stack: fit, Findings: append([]Finding{note}, fitFs...), Default: &def}, nil
}

// Verdict is Fail if any finding failed, else UnknownFact if any finding is
// unknown (a fact the matrix lacks is never a pass), else Pass. Warnings
// pass.
func Verdict(fs []Finding) Status {
	out := Pass
	for _, f := range fs {
		switch f.Status {
		case Fail:
			return Fail
		case UnknownFact:
			out = UnknownFact
		}
	}
	return out
}

// StrictVerdict is the verdict under --strict (publish.yaml's validate:
// strict: true), for CI: Fail if any finding failed, is unknown or
// warns, else Pass.
func StrictVerdict(fs []Finding) Status {
	for _, f := range fs {
		if f.Status == Fail || f.Status == UnknownFact || f.Status == Warn {
			return Fail
		}
	}
	return Pass
}

// VerdictOf is StrictVerdict when strict, else Verdict.
func VerdictOf(fs []Finding, strict bool) Status {
	if strict {
		return StrictVerdict(fs)
	}
	return Verdict(fs)
}

// hostOf is the host c describes: its driver and GPUs, or, with a
// target, the target's driver unless c gives one and the target's GPUs
// narrowed to c's.
func (db *DB) hostOf(c Constraints) (Host, error) {
	if c.Target == "" {
		return Host{Driver: c.Driver, GPU: c.GPU}, nil
	}
	t, err := db.Target(c.Target)
	if err != nil {
		return Host{}, err
	}
	if t, _, err = db.NarrowTarget(t, c.GPU); err != nil {
		return Host{}, err
	}
	h := Host{Driver: c.Driver, GPU: strings.Join(t.GPUs, ",")}
	if h.Driver.IsZero() {
		h.Driver = t.Driver
	}
	return h, nil
}
