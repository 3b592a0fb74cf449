package matrix

import (
	"fmt"
	"strings"
)

// The frameworks gpuimg resolves, by the names Stack.Frameworks uses.
const (
	FrameworkTorch      = "torch"
	FrameworkTensorFlow = "tensorflow"
	FrameworkJAX        = "jax"
)

// FrameworkNames lists the frameworks in the one order every listing,
// summary and Dockerfile uses: torch, tensorflow, jax.
func FrameworkNames() []string {
	return []string{FrameworkTorch, FrameworkTensorFlow, FrameworkJAX}
}

// NamedFramework is one framework of a Stack with its name.
type NamedFramework struct {
	Name string
	Framework
}

// FrameworkList returns the stack's frameworks in FrameworkNames order.
func (s Stack) FrameworkList() []NamedFramework {
	var out []NamedFramework
	for _, n := range FrameworkNames() {
		if fw, ok := s.Frameworks[n]; ok {
			out = append(out, NamedFramework{Name: n, Framework: fw})
		}
	}
	return out
}

// Tag names the stack in one token, for image version labels and tags:
// cuda12.2.2-torch2.3.1-py3.10.
func (s Stack) Tag() string {
	parts := []string{"cuda" + s.CUDA}
	for _, fw := range s.FrameworkList() {
		parts = append(parts, fw.Name+fw.Version)
	}
	parts = append(parts, "py"+s.Python)
	return strings.Join(parts, "-")
}

// Summary describes the stack in one line for people: CUDA 12.2.2, torch
// 2.3.1 (CUDA 12.1), Python 3.10, ubuntu22.04, driver >= 535.104.05.
func (s Stack) Summary() string {
	parts := []string{"CUDA " + s.CUDA}
	for _, fw := range s.FrameworkList() {
		parts = append(parts, fmt.Sprintf("%s %s (CUDA %s)", fw.Name, fw.Version, fw.CUDA))
	}
	parts = append(parts, "Python "+s.Python, s.OS)
	if s.MinDriver != "" {
		parts = append(parts, "driver >= "+s.MinDriver)
	}
	return strings.Join(parts, ", ")
}

// CUDATag turns CUDA 12.1 (or 12.1.1) into "121": the suffix of PyTorch's
// cu121 wheel variants and of image tags.
func CUDATag(v Version) string { return fmt.Sprintf("%d%d", v.Major(), v.Minor()) }

// ParseCUDATag reads a wheel variant's label (cu121, as in 2.3.1+cu121)
// as the CUDA major.minor it names ("12.1"), the inverse of CUDATag: the
// last digit is the minor. ok is false for anything else (cpu, rocm6.1).
func ParseCUDATag(label string) (cuda string, ok bool) {
	d, found := strings.CutPrefix(strings.ToLower(label), "cu")
	if !found || len(d) < 2 || strings.Trim(d, "0123456789") != "" {
		return "", false
	}
	return d[:len(d)-1] + "." + d[len(d)-1:], true
}

// Short names the stack in a few words, for progress lines and report
// rows: "torch 2.7.1 cu128 py3.12" (frameworks, the CUDA tag, Python).
func (s Stack) Short() string {
	var parts []string
	for _, fw := range s.FrameworkList() {
		parts = append(parts, fw.Name+" "+fw.Version)
	}
	if v, err := ParseVersion(s.CUDA); err == nil {
		parts = append(parts, "cu"+CUDATag(v))
	}
	if s.Python != "" {
		parts = append(parts, "py"+s.Python)
	}
	return strings.Join(parts, " ")
}

// Installed is the version pip installs for the framework: the pin of its
// own package in Packages (tensorflow[and-cuda]==2.15.0.post1 gives
// 2.15.0.post1, a post release that fixed the packaging), else Version.
// Checks of an image compare the installed distribution with it.
func (f Framework) Installed(name string) string {
	for _, p := range f.Packages {
		dist, ver, ok := strings.Cut(p, "==")
		if !ok {
			continue
		}
		if i := strings.IndexByte(dist, '['); i >= 0 {
			dist = dist[:i]
		}
		if strings.EqualFold(strings.TrimSpace(dist), name) {
			return strings.TrimSpace(ver)
		}
	}
	return f.Version
}
