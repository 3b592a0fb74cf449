package validate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuimg/gpuimg/matrix"
)

// Coverage is the image's device code as a whole: the architectures on
// which every library with device code runs, and what that means for the
// matrix's GPUs. Each library is judged by matrix.KernelCoverage, the
// rule of the gpu check, and the image is as good as its worst library.
type Coverage struct {
	// Native are the architectures every library has SASS for.
	Native []string `json:"native"`
	// ViaPTX are those every library runs on, some only by JIT-compiling
	// PTX (slow first start; impossible under minor-version
	// compatibility).
	ViaPTX []string `json:"via_ptx"`
	// GPUs are the matrix's GPUs by how the image runs on them: native,
	// via_ptx, or none (a library has no kernels for it).
	GPUs CoverageGPUs `json:"gpus"`
}

// CoverageGPUs are the matrix's GPUs by coverage.
type CoverageGPUs struct {
	Native []string `json:"native"`
	ViaPTX []string `json:"via_ptx"`
	None   []string `json:"none"`
}

// imageCoverage is how the device code of every library in kernels runs on
// architecture arch as a whole: the worst of the libraries, with the
// libraries sorted into native, jit and missing (path, and what it has).
func imageCoverage(arch string, kernels map[string]Kernels) (worst matrix.Coverage, native, jit, missing []string) {
	libs := make([]string, 0, len(kernels))
	for p := range kernels {
		libs = append(libs, p)
	}
	sort.Strings(libs)
	worst = matrix.Native
	for _, p := range libs {
		k := kernels[p]
		cov := matrix.KernelCoverage(arch, k.SASS, k.PTX)
		switch cov {
		case matrix.Native:
			native = append(native, path2(p))
		case matrix.ViaPTX:
			jit = append(jit, path2(p))
		default:
			has := strings.Join(k.SASS, " ")
			if has == "" {
				has = "only PTX: " + strings.Join(k.PTX, " ")
			}
			missing = append(missing, fmt.Sprintf("%s (has %s)", path2(p), has))
		}
		worst = min(worst, cov)
	}
	return worst, native, jit, missing
}

// rollUp is the image's coverage over the matrix's architectures and
// GPUs; nil when no library has device code.
func rollUp(db *matrix.DB, kernels map[string]Kernels) *Coverage {
	if len(kernels) == 0 {
		return nil
	}
	cov := &Coverage{Native: []string{}, ViaPTX: []string{}, GPUs: CoverageGPUs{Native: []string{}, ViaPTX: []string{}, None: []string{}}}
	byArch := map[string]matrix.Coverage{}
	for _, a := range db.Archs {
		c, _, _, _ := imageCoverage(a.Arch, kernels)
		byArch[a.Arch] = c
		switch c {
		case matrix.Native:
			cov.Native = append(cov.Native, a.Arch)
		case matrix.ViaPTX:
			cov.ViaPTX = append(cov.ViaPTX, a.Arch)
		}
	}
	for _, g := range db.GPUs {
		c, ok := byArch[g.Arch]
		if !ok {
			c, _, _, _ = imageCoverage(g.Arch, kernels)
		}
		switch c {
		case matrix.Native:
			cov.GPUs.Native = append(cov.GPUs.Native, g.Name)
		case matrix.ViaPTX:
			cov.GPUs.ViaPTX = append(cov.GPUs.ViaPTX, g.Name)
		default:
			cov.GPUs.None = append(cov.GPUs.None, g.Name)
		}
	}
	return cov
}

// Line is the roll-up in one sentence: "every library with device code
// runs natively on sm_80 sm_86 sm_90, through PTX on sm_100; of the
// matrix's 53 GPUs the image runs on 30 natively (A10, A100-PCIE-40GB, …
// and 24 more), not on 23 (…)". The JSON lists every GPU.
func (c *Coverage) Line() string {
	archs := "on no architecture"
	if len(c.Native) > 0 {
		archs = "natively on " + strings.Join(c.Native, " ")
	}
	if len(c.ViaPTX) > 0 {
		archs += ", through PTX on " + strings.Join(c.ViaPTX, " ")
	}
	total := len(c.GPUs.Native) + len(c.GPUs.ViaPTX) + len(c.GPUs.None)
	var on []string
	for _, g := range []struct {
		what  string
		names []string
	}{{"natively", c.GPUs.Native}, {"only through PTX JIT", c.GPUs.ViaPTX}} {
		if len(g.names) > 0 {
			on = append(on, fmt.Sprintf("%d %s (%s)", len(g.names), g.what, someNames(g.names)))
		}
	}
	runs := "on none"
	if len(on) > 0 {
		runs = "on " + strings.Join(on, ", ")
	}
	not := ""
	if len(c.GPUs.None) > 0 {
		not = fmt.Sprintf(", not on %d (%s)", len(c.GPUs.None), someNames(c.GPUs.None))
	}
	return fmt.Sprintf("every library with device code runs %s; of the matrix's %d GPUs the image runs %s%s", archs, total, runs, not)
}

// someNames lists up to six names, then how many more there are.
func someNames(names []string) string {
	const shown = 6
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
