package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestFindGPUNames: GPU names as people type them and as nvidia-smi/NVML
// print them (the NVML strings are the "name" field of real cards).
func TestFindGPUNames(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ in, want string }{
		// typed forms
		{"RTX 4090", "RTX-4090"},
		{"rtx4090", "RTX-4090"},
		{"4090", "RTX-4090"},
		{"rtx_4090", "RTX-4090"},
		{"GeForce RTX 4090", "RTX-4090"},
		{"h100", "H100-SXM"}, // the table's alias: a bare H100 is the SXM part
		{"H100", "H100-SXM"},
		{" H100 SXM5 ", "H100-SXM"},
		{"H100 80GB HBM3", "H100-SXM"},
		{"a100 pcie 80gb", "A100-PCIE-80GB"}, // words in another order
		{"a6000", "RTX-A6000"},
		{"a100 sxm", "A100-SXM4-40GB"}, // starts with alias a100, the table's A100
		{"l40s", "L40S"},
		// NVML / nvidia-smi names
		{"NVIDIA GeForce RTX 4090", "RTX-4090"},
		{"NVIDIA H100 80GB HBM3", "H100-SXM"},
		{"NVIDIA H100 PCIe", "H100-PCIE"},
		{"NVIDIA H100 NVL", "H100-NVL"},
		{"NVIDIA H200", "H200-SXM"},
		{"NVIDIA H200 NVL", "H200-NVL"},
		{"NVIDIA GH200 480GB", "GH200"},
		{"NVIDIA B200", "B200"},
		{"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"},
		{"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
		{"NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"},
		{"NVIDIA A100 80GB PCIe", "A100-PCIE-80GB"},
		{"Tesla V100-SXM2-16GB", "V100-SXM2-16GB"},
		{"Tesla V100-SXM2-32GB", "V100-SXM2-32GB"},
		{"Tesla V100-PCIE-32GB", "V100-PCIE-32GB"},
		{"Tesla T4", "T4"},
		{"NVIDIA A10", "A10"},
		{"NVIDIA L4", "L4"},
		{"NVIDIA RTX A6000", "RTX-A6000"},
		// architectures
		{"sm_90", "sm_90"},
		{"8.6", "sm_86"},
	} {
		g, err := db.FindGPU(tt.in)
		if err != nil || g.Name != tt.want {
			t.Errorf("FindGPU(%q) = %q, %v; want %s", tt.in, g.Name, err, tt.want)
		}
	}
	// Vendor words are dropped, not matched as aliases: the test world's
	// rows have no vendor aliases.
	w := world(t)
	for _, tt := range []struct{ in, want string }{
		{"Tesla V100-SXM2-16GB", "V100"},
		{"NVIDIA H100 80GB HBM3", "H100-SXM"},
		{"NVIDIA GeForce A10", "A10"},
		{"Quadro b200", "B200"},
	} {
		if g, err := w.FindGPU(tt.in); err != nil || g.Name != tt.want {
			t.Errorf("test world: FindGPU(%q) = %q, %v; want %s", tt.in, g.Name, err, tt.want)
		}
	}
	// Every name and alias of the table finds its own row.
	for _, g := range db.GPUs {
		for _, k := range append([]string{g.Name}, g.Aliases...) {
			if got, err := db.LookupGPU(k); err != nil || got.Name != g.Name {
				t.Errorf("LookupGPU(%q) = %q, %v; want its row %s", k, got.Name, err, g.Name)
			}
		}
	}
}

func TestFindGPUUnknownAndAmbiguous(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in     string
		is     error
		has    []string
		hasNot string
	}{
		{"h1000", ErrUnknownGPU, []string{`unknown GPU "h1000": did you mean H100-SXM (sm_90),`, "judge by architecture: --gpu sm_90 if it is a H100-SXM"}, ""},
		{"RTX 4080", ErrUnknownGPU, []string{"did you mean RTX-4090 (sm_89)", "--gpu sm_89"}, ""},
		{"NVIDIA L40G", ErrUnknownGPU, []string{"did you mean L40 (sm_89),"}, ""},
		// A prefix: one name starts with the other.
		{"rtx5090foundersedition", ErrUnknownGPU, []string{"did you mean RTX-5090 (sm_120)", "--gpu sm_120"}, ""},
		{"voodoo5", ErrUnknownGPU, []string{`unknown GPU "voodoo5": give a name (A10, A100-PCIE-40GB,`, "judge by architecture: --gpu sm_XY"}, "did you mean"},
		{"NVIDIA", ErrUnknownGPU, []string{`unknown GPU "NVIDIA"`}, "did you mean"},
		{"rtx", ErrAmbiguousGPU, []string{`ambiguous GPU "rtx": it could be RTX-3090, RTX-4090, RTX-4090D, RTX-5050, RTX-5060, RTX-5060-Ti, RTX-5070, RTX-5070-Ti, RTX-5080, RTX-5090, RTX-6000-Ada, RTX-A6000, RTX-PRO-2000, RTX-PRO-4000, RTX-PRO-4500, RTX-PRO-5000, RTX-PRO-6000-Max-Q, RTX-PRO-6000-Server, RTX-PRO-6000-Workstation; give one of these names`}, ""},
	} {
		_, err := db.FindGPU(tt.in)
		if !errors.Is(err, tt.is) {
			t.Errorf("FindGPU(%q) = %v, want %v", tt.in, err, tt.is)
			continue
		}
		for _, h := range tt.has {
			if !strings.Contains(err.Error(), h) {
				t.Errorf("FindGPU(%q): %q lacks %q", tt.in, err, h)
			}
		}
		if tt.hasNot != "" && strings.Contains(err.Error(), tt.hasNot) {
			t.Errorf("FindGPU(%q): %q has %q", tt.in, err, tt.hasNot)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "abc", 3}, {"h100", "h100", 0}, {"h1000", "h100", 1}, {"kitten", "sitting", 3}} {
		if got := editDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}
