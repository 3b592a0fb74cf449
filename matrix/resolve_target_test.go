package matrix

import (
	"errors"
	"strings"
	"testing"
)

// TestResolveEveryTarget resolves, for every embedded target, a stack
// without frameworks and the newest PyTorch, and checks the result with
// CheckStack (check.go, a separate home of the driver and kernel rules):
// the fleet's driver meets the stack's floor (strictly, or under
// minor-version compatibility when the stack says so) and every GPU of the
// fleet runs it.
func TestResolveEveryTarget(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(db.Targets) < 11 {
		t.Fatalf("%d embedded targets, want at least the 11 the issue names", len(db.Targets))
	}
	frameworks := map[string]Constraints{
		"no framework": {},
		"torch latest": {Torch: &Constraint{}},
	}
	for _, tg := range db.Targets {
		for fname, c := range frameworks {
			t.Run(tg.Name+"/"+fname, func(t *testing.T) {
				c.Target = tg.Name
				s, err := db.Resolve(c)
				if err != nil {
					t.Fatalf("Resolve: %v", err)
				}
				if s.Target != tg.Name {
					t.Errorf("stack target %q, want %q", s.Target, tg.Name)
				}
				if !strings.HasPrefix(s.Notes[0], "resolved for target "+tg.Name) {
					t.Errorf("first note %q does not say the stack came from the target", s.Notes[0])
				}
				if _, ok := s.Sources[tg.Source]; !ok {
					t.Errorf("stack sources lack the target's %s", tg.Source)
				}
				if tg.Driver.IsZero() {
					if !hasNote(s, "no driver floor was checked") {
						t.Errorf("target without a driver: no note says the floor was not checked: %q", s.Notes)
					}
				} else {
					floors, err := s.DriverFloors()
					if err != nil {
						t.Fatal(err)
					}
					switch fit := floors.Fit(tg.Driver); fit {
					case DriverMeetsFloor:
					case DriverCompatOnly:
						if !hasNote(s, "minor-version compatibility") || strings.HasPrefix(s.RequireCUDA, "cuda>=") && !strings.HasSuffix(s.RequireCUDA, ".0") {
							t.Errorf("driver %s meets only the compat floor %s, but the stack does not say so or keeps NVIDIA_REQUIRE_CUDA=%s", tg.Driver, s.MinDriverCompat, s.RequireCUDA)
						}
					default:
						t.Errorf("driver %s against the stack's floors %s/%s: %s", tg.Driver, s.MinDriver, s.MinDriverCompat, fit)
					}
				}
				if len(tg.GPUs) == 0 && !hasNote(s, "no kernel coverage was checked") {
					t.Errorf("target without GPUs: no note says coverage was not checked: %q", s.Notes)
				}
				for _, g := range tg.GPUs {
					fs, err := db.CheckStack(s, Host{Driver: tg.Driver, GPU: g})
					if err != nil {
						t.Fatalf("CheckStack %s: %v", g, err)
					}
					for _, f := range fs {
						if f.Status == Fail {
							t.Errorf("%s on %s: %s: %s", s.Summary(), g, f.Name, f.Message)
						}
					}
				}
			})
		}
	}
}

func hasNote(s Stack, part string) bool {
	for _, n := range s.Notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

func TestResolveTargetChoices(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	anyTorch := &Constraint{}
	t.Run("strict first", func(t *testing.T) {
		s, err := db.Resolve(Constraints{Target: "sagemaker/p5", Torch: anyTorch})
		if err != nil {
			t.Fatal(err)
		}
		if s.GPU != "H100-SXM" || hasNote(s, "minor-version compatibility") {
			t.Errorf("got %s for %s (notes %q), want a strict stack for H100-SXM", s.Summary(), s.GPU, s.Notes)
		}
		if f, _ := s.DriverFloors(); f.Fit(MustVersion("535.54.03")) != DriverMeetsFloor {
			t.Errorf("floor %s is above sagemaker/p5's driver", s.MinDriver)
		}
	})
	t.Run("compat when no strict stack", func(t *testing.T) {
		s, err := db.Resolve(Constraints{Target: "sagemaker/p4d", Torch: anyTorch})
		if err != nil {
			t.Fatal(err)
		}
		if !hasNote(s, "no stack meets driver 470.42.01 strictly") {
			t.Errorf("notes %q do not say the stack needs minor-version compatibility", s.Notes)
		}
	})
	t.Run("an explicit driver wins, a GPU narrows the fleet's", func(t *testing.T) {
		s, err := db.Resolve(Constraints{Target: "eks/al2023", GPU: "l4", Driver: MustVersion("550.54.14")})
		if err != nil {
			t.Fatal(err)
		}
		if s.GPU != "L4" || !hasNote(s, "the given GPU l4 narrows target eks/al2023's GPUs") || !hasNote(s, "the given driver 550.54.14 replaces") {
			t.Errorf("GPU %q, notes %q", s.GPU, s.Notes)
		}
	})
	t.Run("a GPU outside the fleet is an error", func(t *testing.T) {
		_, err := db.Resolve(Constraints{Target: "sagemaker/p5", GPU: "l4"})
		if err == nil || !strings.Contains(err.Error(), "GPU L4 is not among target sagemaker/p5's GPUs (H100-SXM)") {
			t.Fatalf("Resolve = %v, want an error naming the fleet's GPUs", err)
		}
	})
	t.Run("conflict names the target", func(t *testing.T) {
		v := MustConstraint("2.9")
		_, err := db.Resolve(Constraints{Target: "sagemaker/p4d", Torch: &v})
		var ce *ConflictError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "target sagemaker/p4d gives driver 470.42.01 and GPUs A100-SXM4-40GB") {
			t.Fatalf("Resolve = %v, want a conflict naming what the target gave", err)
		}
	})
	t.Run("unknown target", func(t *testing.T) {
		_, err := db.Resolve(Constraints{Target: "sagemaker/p6"})
		if !errors.Is(err, ErrUnknownTarget) || !strings.Contains(err.Error(), "sagemaker/p5") {
			t.Fatalf("Resolve = %v, want an unknown-target error suggesting sagemaker/p5", err)
		}
	})
}

// TestResolveSeveralGPUs checks that a GPU list is covered GPU by GPU: the
// newest PyTorch dropped Volta (sm_70) from its CUDA 12.8 builds, so a V100 and B200 fleet gets an
// older release that has kernels for both.
func TestResolveSeveralGPUs(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	anyTorch := &Constraint{}
	alone, err := db.Resolve(Constraints{Torch: anyTorch, GPU: "b200"})
	if err != nil {
		t.Fatal(err)
	}
	var c Constraints
	if err := c.Set(FieldGPU, "v100, b200"); err != nil || c.GPU != "v100,b200" {
		t.Fatalf("Set(gpu, 'v100, b200') = %v, GPU %q", err, c.GPU)
	}
	c.Torch = anyTorch
	both, err := db.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	if both.GPU != "V100-SXM2-16GB,B200" {
		t.Errorf("stack GPU %q", both.GPU)
	}
	if both.Frameworks["torch"].Version == alone.Frameworks["torch"].Version {
		t.Errorf("torch %s for B200 alone and for V100+B200: the V100 did not narrow the choice", alone.Frameworks["torch"].Version)
	}
	for _, g := range []string{"v100", "b200"} {
		fs, err := db.CheckStack(both, Host{GPU: g})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Status == Fail {
				t.Errorf("%s on %s: %s", both.Summary(), g, f.Message)
			}
		}
	}
	if err := c.Set(FieldGPU, "a100,,h100"); err == nil {
		t.Error("Set(gpu, 'a100,,h100') accepted an empty entry")
	}
}

// TestNarrowTarget: --gpu narrows a fleet's GPU list (issue 43 item 7).
// Facts: targets.yaml's eks/al2023 lists T4, A10G, L4, L40S, A100-SXM4-40GB,
// A100-SXM4-80GB, H100-SXM, H200-SXM, B200 (the EC2 GPU families).
func TestNarrowTarget(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	eks, err := db.Target("eks/al2023")
	if err != nil {
		t.Fatal(err)
	}
	bare := eks
	bare.Name, bare.GPUs = "test/bare", nil
	for _, tt := range []struct {
		name    string
		t       Target
		gpu     string
		want    []string
		note    string
		errWant string
	}{
		{"no --gpu keeps the fleet", eks, "", eks.GPUs, "", ""},
		{"one GPU", eks, "h100", []string{"H100-SXM"}, "narrows target eks/al2023's GPUs", ""},
		{"several GPUs", eks, "l4,a10g", []string{"L4", "A10G"}, "to L4, A10G", ""},
		{"an architecture keeps the fleet's GPUs of it", eks, "sm_80", []string{"A100-SXM4-40GB", "A100-SXM4-80GB"}, "to A100-SXM4-40GB, A100-SXM4-80GB", ""},
		{"a GPU outside the fleet", eks, "rtx5090", nil, "", "GPU RTX-5090 is not among target eks/al2023's GPUs"},
		{"an unknown GPU", eks, "h1000", nil, "", `unknown GPU "h1000"`},
		{"a fleet without GPUs takes the given ones", bare, "l4", []string{"L4"}, "records no GPUs", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, note, err := db.NarrowTarget(tt.t, tt.gpu)
			if tt.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errWant) {
					t.Fatalf("err %v, want %q", err, tt.errWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.GPUs, ",") != strings.Join(tt.want, ",") {
				t.Errorf("GPUs %v, want %v", got.GPUs, tt.want)
			}
			if !strings.Contains(note, tt.note) || (tt.note == "") != (note == "") {
				t.Errorf("note %q, want %q", note, tt.note)
			}
		})
	}
}
