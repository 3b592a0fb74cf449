package validate

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestTargetToolkit checks the fleet's NVIDIA Container Toolkit against
// the toolkit advisories of the built-in matrix (NVIDIA bulletins 5582,
// 5616, 5659, 5850), and the escalation of the image's LD_PRELOAD finding.
func TestTargetToolkit(t *testing.T) {
	sp := "opt/venv/lib/python3.10/site-packages/"
	torch := []file{{sp + "torch-2.10.0.dist-info/METADATA", "Name: torch\nVersion: 2.10.0\n"}, {sp + ".wh.torch-2.3.1+cu121.dist-info", ""}}
	fleet := func(v string) matrix.Target {
		t := matrix.Target{Name: "onprem/gpu", Row: matrix.Row{Source: "ours"}}
		if v != "" {
			t.ContainerToolkit = &matrix.ContainerToolkit{Version: matrix.MustVersion(v), Source: "ours", Retrieved: "2026-12-02"}
		}
		return t
	}
	const ct = "target:onprem/gpu:container-toolkit"
	tests := []struct {
		name     string
		target   matrix.Target
		env      []string
		checks   map[string]matrix.Status // every container-toolkit check
		in       map[string]string        // message fragments, by check name
		advisory string                   // fragment of advisory:CVE-2025-23266, "" for none
		notIn    string                   // fragment advisory:CVE-2025-23266 must lack
	}{
		{name: "no toolkit recorded", target: fleet(""), checks: map[string]matrix.Status{}},
		{name: "toolkit 1.16.1", target: fleet("1.16.1"), checks: map[string]matrix.Status{
			ct + "/CVE-2024-0132": matrix.Warn, ct + "/CVE-2025-23359": matrix.Warn, ct + "/CVE-2025-23266": matrix.Warn,
			ct + "/CVE-2025-23267": matrix.Warn, ct + "/CVE-2026-24260": matrix.Warn},
			in: map[string]string{ct + "/CVE-2024-0132": "affected by CVE-2024-0132 (critical, CVSS 9.0)"}},
		{name: "toolkit 1.17.3 and LD_PRELOAD", target: fleet("1.17.3"), env: []string{"LD_PRELOAD=/proc/self/cwd/poc.so"},
			checks: map[string]matrix.Status{ct + "/CVE-2025-23359": matrix.Warn, ct + "/CVE-2025-23266": matrix.Fail,
				ct + "/CVE-2025-23267": matrix.Warn, ct + "/CVE-2026-24260": matrix.Warn},
			in: map[string]string{
				ct + "/CVE-2025-23359": "the hosts, not the image, must be upgraded to toolkit 1.17.4 or later",
				ct + "/CVE-2025-23266": "sets LD_PRELOAD=/proc/self/cwd/poc.so, which triggers CVE-2025-23266",
			},
			advisory: "the fleet of onprem/gpu (toolkit 1.17.3) runs an affected toolkit"},
		{name: "toolkit 1.17.8 and LD_PRELOAD", target: fleet("1.17.8"), env: []string{"LD_PRELOAD=/x.so"},
			checks: map[string]matrix.Status{ct + "/CVE-2026-24260": matrix.Warn},
			in:     map[string]string{ct + "/CVE-2026-24260": "NVIDIA Container Toolkit 1.17.8 on the hosts, ours read 2026-12-02"},
			notIn:  "fleet of"},
		{name: "toolkit 1.19.0", target: fleet("1.19.0"), checks: map[string]matrix.Status{ct + "/CVE-2026-24260": matrix.Warn}},
		{name: "toolkit 1.19.1", target: fleet("1.19.1"), checks: map[string]matrix.Status{ct: matrix.Pass},
			in: map[string]string{ct: "no toolkit advisory of the matrix affects it (the newest fix is 1.19.1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := torchImage(t, "12.1", "cuda>=12.2", nil, torch...)
			if tt.env != nil {
				cfg, _ := img.ConfigFile()
				cfg = cfg.DeepCopy()
				cfg.Config.Env = append(cfg.Config.Env, tt.env...)
				var err error
				if img, err = mutate.ConfigFile(img, cfg); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Inspect(t.Context(), img, Options{DB: db(t), Targets: []matrix.Target{tt.target}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]matrix.Status{}
			msgs := map[string]string{}
			for _, c := range r.Checks {
				msgs[c.Name] = c.Message
				if strings.HasPrefix(c.Name, ct) {
					got[c.Name] = c.Status
				}
			}
			for n, st := range tt.checks {
				if got[n] != st {
					t.Errorf("%s is %q, want %s: %s", n, got[n], st, msgs[n])
				}
			}
			for n := range got {
				if _, ok := tt.checks[n]; !ok {
					t.Errorf("unexpected %s (%s): %s", n, got[n], msgs[n])
				}
			}
			for n, want := range tt.in {
				if !strings.Contains(msgs[n], want) {
					t.Errorf("%s: %q lacks %q", n, msgs[n], want)
				}
			}
			adv, set := msgs["advisory:CVE-2025-23266"]
			if set != (tt.env != nil) {
				t.Errorf("advisory:CVE-2025-23266 reported %v, want %v", set, tt.env != nil)
			}
			if tt.advisory != "" && !strings.Contains(adv, tt.advisory) {
				t.Errorf("advisory:CVE-2025-23266: %q lacks %q", adv, tt.advisory)
			}
			if tt.notIn != "" && strings.Contains(adv, tt.notIn) {
				t.Errorf("advisory:CVE-2025-23266: %q names a fleet", adv)
			}
		})
	}
}

// TestBuiltinTargetToolkit pins the toolkit the EKS rows record (AWS's
// amazon-eks-ami CHANGELOG) and that it passes every toolkit advisory.
func TestBuiltinTargetToolkit(t *testing.T) {
	d := db(t)
	for _, name := range []string{"eks/al2023", "eks/p5"} {
		tg, err := d.Target(name)
		if err != nil {
			t.Fatal(err)
		}
		if tg.ContainerToolkit == nil || tg.ContainerToolkit.Version.String() != "1.19.1" || tg.ContainerToolkit.Source != "tgt-eks-ami-changelog" {
			t.Fatalf("%s container_toolkit = %+v, want 1.19.1 from tgt-eks-ami-changelog", name, tg.ContainerToolkit)
		}
		img := torchImage(t, "12.1", "cuda>=12.2", nil)
		r, err := Inspect(t.Context(), img, Options{DB: d, Targets: []matrix.Target{tg}})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(r.Checks, func(c Check) bool { return c.Name == "target:"+name+":container-toolkit" })
		if i < 0 || r.Checks[i].Status != matrix.Pass {
			t.Errorf("%s: no passing container-toolkit check: %+v", name, TargetChecks(r.Checks))
		}
	}
}
