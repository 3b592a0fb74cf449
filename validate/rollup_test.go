package validate

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gpuimg/gpuimg/matrix"
)

// deviceLib is a library of more than 64 KiB (what validate scans) with
// one fat binary holding entries (kind, arch, flags).
func deviceLib(entries [][3]int) string {
	return strings.Repeat("not device code ", 5<<10) + string(container(entries))
}

// TestCoverageRollUp checks validate's one-line roll-up against its own
// gpu check, GPU by GPU: the roll-up puts a GPU where the gpu check
// judges it (native: pass, PTX only: warn, no kernels: fail).
func TestCoverageRollUp(t *testing.T) {
	sp := "opt/venv/lib/python3.10/site-packages/"
	img := torchImage(t, "12.1", "cuda>=12.2", nil,
		file{sp + "torch/lib/libtorch_cuda.so", deviceLib([][3]int{{kindELF, 80}, {kindELF, 90}, {kindPTX, 90}})},
		file{sp + "nvidia/cublas/lib/libcublasLt.so.12", deviceLib([][3]int{{kindELF, 75}, {kindELF, 80}, {kindELF, 86}, {kindELF, 90}, {kindPTX, 90}})},
	)
	d := db(t)
	r, err := Inspect(t.Context(), img, Options{DB: d})
	if err != nil {
		t.Fatal(err)
	}
	cov := r.Coverage
	if cov == nil {
		t.Fatalf("no coverage; kernels %v", r.Found.Kernels)
	}
	// sm_86 and sm_89 run torch's sm_80 code; sm_75 has only cuBLAS's.
	for arch, want := range map[string]string{"sm_80": "native", "sm_86": "native", "sm_89": "native", "sm_90": "native", "sm_100": "ptx", "sm_120": "ptx", "sm_75": "none", "sm_70": "none"} {
		got := "none"
		switch {
		case slices.Contains(cov.Native, arch):
			got = "native"
		case slices.Contains(cov.ViaPTX, arch):
			got = "ptx"
		}
		if got != want {
			t.Errorf("%s: %s, want %s (native %v, PTX %v)", arch, got, want, cov.Native, cov.ViaPTX)
		}
	}
	if n := len(cov.GPUs.Native) + len(cov.GPUs.ViaPTX) + len(cov.GPUs.None); n != len(d.GPUs) {
		t.Errorf("roll-up places %d GPUs, the matrix has %d", n, len(d.GPUs))
	}
	for _, gpus := range []struct {
		names []string
		want  matrix.Status
	}{{cov.GPUs.Native, matrix.Pass}, {cov.GPUs.ViaPTX, matrix.Warn}, {cov.GPUs.None, matrix.Fail}} {
		for _, g := range gpus.names {
			one, err := Inspect(t.Context(), img, Options{DB: d, GPU: g})
			if err != nil {
				t.Fatal(err)
			}
			if got := statuses(one)["gpu"]; got != gpus.want {
				t.Errorf("%s: the gpu check says %s, the roll-up places it where the check says %s", g, got, gpus.want)
			}
		}
	}
	var txt bytes.Buffer
	if err := r.WriteTextWidth(&txt, 80); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"  coverage  every library with device code runs natively on", "T4"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	for line := range strings.SplitSeq(txt.String(), "\n") {
		if n := len([]rune(strings.TrimRight(line, " "))); n > 80 {
			t.Errorf("line of %d runes at width 80: %q", n, line)
		}
	}
}
