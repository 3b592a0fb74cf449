package validate

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/matrix"
)

func TestAdvisories(t *testing.T) {
	sp := "opt/venv/lib/python3.10/site-packages/"
	torchAt := func(v string) file {
		return file{sp + "torch-" + v + ".dist-info/METADATA", "Name: torch\nVersion: " + v + "\n"}
	}
	tests := []struct {
		name  string
		extra []file
		env   []string
		want  []string // advisory check names that warn
		in    map[string]string
	}{
		{name: "torch 2.3.1+cu121", want: []string{"advisory:CVE-2025-32434", "advisory:CVE-2026-24747"},
			in: map[string]string{"advisory:CVE-2025-32434": "torch 2.3.1+cu121 is affected by CVE-2025-32434, GHSA-53q9-r3pm-6pq6 (critical, CVSS 9.3)"}},
		{name: "torch 2.6.0", extra: []file{torchAt("2.6.0")}, want: []string{"advisory:CVE-2026-24747"}},
		{name: "torch 2.6.0 pre-release", extra: []file{torchAt("2.6.0a0+ecf3bae40a")}, want: []string{"advisory:CVE-2025-32434", "advisory:CVE-2026-24747"},
			in: map[string]string{"advisory:CVE-2025-32434": "a pre-release of the fixed version"}},
		{name: "torch 2.10.0", extra: []file{torchAt("2.10.0+cu128")}},
		// PEP 440 order (issue 43): a post-release of the fixed version
		// carries the fix; an epoch sorts after every version without one.
		{name: "torch 2.6.0.post1", extra: []file{torchAt("2.6.0.post1")}, want: []string{"advisory:CVE-2026-24747"}},
		{name: "torch 1!2.0.0", extra: []file{torchAt("1!2.0.0")}},
		{name: "LD_PRELOAD", extra: []file{torchAt("2.10.0")}, env: []string{"LD_PRELOAD=/proc/self/cwd/poc.so"}, want: []string{"advisory:CVE-2025-23266"},
			in: map[string]string{"advisory:CVE-2025-23266": "sets LD_PRELOAD=/proc/self/cwd/poc.so, which triggers CVE-2025-23266"}},
		{name: "devel tools of CUDA 12.2", extra: []file{torchAt("2.10.0"), {"usr/local/cuda-12.2/bin/cuobjdump", "ELF"}, {"usr/local/cuda-12.2/bin/nvdisasm", "ELF"}, {"usr/local/cuda-12.2/nsight-systems-2023.2.3/target-linux-x64/nsys", "ELF"}},
			want: []string{"advisory:CVE-2025-23338", "advisory:CVE-2025-23339", "advisory:CVE-2025-33228"},
			in:   map[string]string{"advisory:CVE-2025-33228": "Nsight Systems of CUDA 12.2.2 (/usr/local/cuda-12.2/nsight-systems-2023.2.3/target-linux-x64/nsys) is affected by CVE-2025-33228"}},
		{name: "devel tools of CUDA 13.1", extra: []file{torchAt("2.10.0"), {"usr/local/cuda-13.1/version.json", `{"cuda":{"version":"13.1.0"}}`}, {"usr/local/cuda-13.1/bin/cuobjdump", "ELF"}, {"usr/local/cuda-12.2/version.json", "deleted"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A later layer's dist-info replaces the base layer's torch.
			extra := tt.extra
			for _, f := range extra {
				if strings.Contains(f.name, "torch-") {
					extra = append(extra, file{sp + ".wh.torch-2.3.1+cu121.dist-info", ""})
				}
				if f.content == "deleted" {
					extra = append(extra, file{"usr/local/.wh.cuda-12.2", ""})
				}
			}
			img := torchImage(t, "12.1", "cuda>=12.2", nil, extra...)
			if tt.env != nil {
				cfg, _ := img.ConfigFile()
				cfg = cfg.DeepCopy()
				cfg.Config.Env = append(cfg.Config.Env, tt.env...)
				var err error
				if img, err = mutate.ConfigFile(img, cfg); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Inspect(t.Context(), img, Options{DB: db(t)})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			msgs := map[string]string{}
			for _, c := range r.Checks {
				if strings.HasPrefix(c.Name, "advisory:") {
					if c.Status != matrix.Warn {
						t.Errorf("%s is %s, want warn", c.Name, c.Status)
					}
					got = append(got, c.Name)
					msgs[c.Name] = c.Message
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("advisories %v, want %v: %v", got, tt.want, msgs)
			}
			for n, want := range tt.in {
				if !strings.Contains(msgs[n], want) {
					t.Errorf("%s: %q lacks %q", n, msgs[n], want)
				}
			}
		})
	}
}
