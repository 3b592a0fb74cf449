package matrix

import (
	"strings"
	"testing"
)

// TestVerdictRanksUnknown: a fact the matrix lacks is never a pass. Verdict
// ranks unknown between pass and fail (warnings pass); StrictVerdict, for
// CI, fails unknown and warnings too.
func TestVerdictRanksUnknown(t *testing.T) {
	f := func(ss ...Status) []Finding {
		var out []Finding
		for _, s := range ss {
			out = append(out, Finding{Name: string(s), Status: s})
		}
		return out
	}
	for _, tt := range []struct {
		name       string
		fs         []Finding
		want, strc Status
	}{
		{"nothing", nil, Pass, Pass},
		{"pass", f(Pass, Pass), Pass, Pass},
		{"warn passes", f(Pass, Warn), Pass, Fail},
		{"unknown is not pass", f(Pass, UnknownFact), UnknownFact, Fail},
		{"unknown and warn", f(Warn, UnknownFact, Pass), UnknownFact, Fail},
		{"fail wins over unknown", f(UnknownFact, Fail), Fail, Fail},
		{"fail wins in any order", f(Fail, UnknownFact), Fail, Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verdict(tt.fs); got != tt.want {
				t.Errorf("Verdict = %s, want %s", got, tt.want)
			}
			if got := StrictVerdict(tt.fs); got != tt.strc {
				t.Errorf("StrictVerdict = %s, want %s", got, tt.strc)
			}
			if VerdictOf(tt.fs, false) != tt.want || VerdictOf(tt.fs, true) != tt.strc {
				t.Errorf("VerdictOf disagrees with Verdict/StrictVerdict")
			}
		})
	}
}

// TestCheckStackUnknownFacts: the examples. A framework release
// whose compiled architectures the matrix does not record, and a GPU
// whose driver branches it does not record, are unknown findings that
// name the missing fact and how to supply it, never a pass.
func TestCheckStackUnknownFacts(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		c       Constraints
		host    Host
		check   string
		missing string
		supply  []string
	}{
		{
			name:    "tensorflow 2.19 on an RTX 5090: archs not recorded",
			c:       Constraints{TensorFlow: cons("2.19"), CUDA: MustConstraint("12.8")},
			host:    Host{GPU: "rtx5090"},
			check:   "gpu/tensorflow",
			missing: "which GPU architectures tensorflow 2.19",
			supply:  []string{"--matrix-file row for tensorflow 2.19", "gpuimg validate IMAGE --gpu sm_120"},
		},
		{
			name:    "jax 0.4.33 on a V100: archs not recorded",
			c:       Constraints{JAX: cons("0.4.33"), CUDA: MustConstraint("12.4")},
			host:    Host{GPU: "v100"},
			check:   "gpu/jax",
			missing: "which GPU architectures jax 0.4.33",
			supply:  []string{"--matrix-file row for jax 0.4.33", "--gpu sm_70"},
		},
		{
			// An A10G is known from 515.65.01 on (gpus.yaml listed_since);
			// the bare architecture has no driver: row.
			name:    "sm_86 on R535: no driver branch recorded for the architecture",
			c:       Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12.2")},
			host:    Host{GPU: "sm_86", Driver: MustVersion("535.104.05")},
			check:   "gpu/driver",
			missing: "which driver branches know sm_86 (sm_86)",
			supply:  []string{"--matrix-file gpus: row for sm_86", "open-gpu-kernel-modules"},
		},
		{
			// T4 is older than NVIDIA's lists, which name it from 575.51.02
			// on (drv-ogkm-tags): a lower bound, so R535 is unknown, not fail.
			name:    "T4 on R535: below the release it is listed since",
			c:       Constraints{Torch: cons("2.3"), CUDA: MustConstraint("12.2")},
			host:    Host{GPU: "t4", Driver: MustVersion("535.104.05")},
			check:   "gpu/driver",
			missing: "whether driver 535.104.05 knows T4 (sm_75): the Compatible GPUs tables of NVIDIA's release tags (https://github.com/NVIDIA/open-gpu-kernel-modules) list it from 575.51.02 on, a lower bound",
			supply:  []string{"at or above 575.51.02", "--matrix-file gpus: row for T4"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := db.Resolve(tt.c)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := db.CheckStack(s, tt.host)
			if err != nil {
				t.Fatal(err)
			}
			var got *Finding
			for i := range fs {
				if fs[i].Name == tt.check {
					got = &fs[i]
				}
			}
			if got == nil {
				t.Fatalf("no %s finding in %+v", tt.check, fs)
			}
			if got.Status != UnknownFact || !strings.Contains(got.Missing, tt.missing) || !strings.Contains(got.Message, tt.missing) {
				t.Errorf("%s = %s %q (missing %q); want unknown naming %q", tt.check, got.Status, got.Message, got.Missing, tt.missing)
			}
			for _, s := range tt.supply {
				if !strings.Contains(got.Supply, s) || !strings.Contains(got.Message, s) {
					t.Errorf("%s: supply %q and message %q should say %q", tt.check, got.Supply, got.Message, s)
				}
			}
			if v := Verdict(fs); v != UnknownFact {
				t.Errorf("verdict %s, want unknown: %+v", v, fs)
			}
			if v := StrictVerdict(fs); v != Fail {
				t.Errorf("strict verdict %s, want fail", v)
			}
		})
	}
}

// TestJAXPythonUpperBounds: issue 44's example, resolve --jax 0.4.33
// --python 3.13, gave a stack although that release published no cp313
// wheels. JAX ships 3.13 wheels from 0.4.34 and 3.14 wheels from 0.7.1
// (jax-ml/jax CHANGELOG.md), and the resolver honours the rows' bounds.
func TestJAXPythonUpperBounds(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		jax, python string
		fits        bool
	}{
		{"0.4.17", "3.12", true},
		{"0.4.33", "3.13", false},
		{"0.4.33", "3.12", true},
		{"0.4.34", "3.13", true},
		{"0.7.0", "3.14", false},
		{"0.7.0", "3.13", true},
		{"0.7.1", "3.14", true},
	} {
		t.Run(tt.jax+"/py"+tt.python, func(t *testing.T) {
			_, err := db.Resolve(Constraints{JAX: cons(tt.jax), Python: MustConstraint(tt.python)})
			if tt.fits && err != nil {
				t.Errorf("jax %s on Python %s: %v", tt.jax, tt.python, err)
			}
			if !tt.fits && (err == nil || !strings.Contains(err.Error(), "needs Python")) {
				t.Errorf("jax %s on Python %s: got %v, want no stack because of the Python bound", tt.jax, tt.python, err)
			}
		})
	}
}
