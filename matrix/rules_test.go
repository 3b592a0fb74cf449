package matrix

import (
	"reflect"
	"strings"
	"testing"
)

func TestDriverFloorsJudge(t *testing.T) {
	stack := Stack{CUDA: "12.2.2", MinDriver: "535.104.05", MinDriverBy: "the image's CUDA 12.2.2", MinDriverCompat: "525.60.13"}
	floors, err := stack.DriverFloors()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		floors  DriverFloors
		driver  string
		fit     DriverFit
		status  Status
		msgHas  []string
		msgNone string
	}{
		{"at the strict floor", floors, "535.104.05", DriverMeetsFloor, Pass, []string{"driver 535.104.05 meets the stack's floor 535.104.05 (set by the image's CUDA 12.2.2)"}, ""},
		{"numeric, not textual, comparison", floors, "535.54.03", DriverCompatOnly, Warn, []string{"below the stack's floor 535.104.05", "minor-version compatibility (>= 525.60.13)", "no PTX JIT"}, ""},
		{"at the compat floor", floors, "525.60.13", DriverCompatOnly, Warn, nil, ""},
		{"below both", floors, "470.57.02", DriverTooOld, Fail, []string{"driver 470.57.02 is below the stack's floor 535.104.05", "525.60.13 under minor-version compatibility", "--driver 470.57.02"}, ""},
		{"no compat floor", DriverFloors{Strict: MustVersion("535.104.05"), Of: "CUDA 12.2"}, "530.30.02", DriverTooOld, Fail, []string{"below CUDA 12.2's floor 535.104.05;"}, "minor-version"},
		{"no floor at all", DriverFloors{Of: "CUDA 13.9"}, "580.65.06", DriverFloorUnknown, Warn, []string{"no driver floor for CUDA 13.9"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := MustVersion(tt.driver)
			if got := tt.floors.Fit(d); got != tt.fit {
				t.Errorf("Fit = %v, want %v", got, tt.fit)
			}
			f := tt.floors.Judge("driver", d)
			if f.Name != "driver" || f.Status != tt.status {
				t.Errorf("Judge = %+v, want status %s", f, tt.status)
			}
			for _, h := range tt.msgHas {
				if !strings.Contains(f.Message, h) {
					t.Errorf("message %q lacks %q", f.Message, h)
				}
			}
			if tt.msgNone != "" && strings.Contains(f.Message, tt.msgNone) {
				t.Errorf("message %q has %q", f.Message, tt.msgNone)
			}
		})
	}
	// A label written before min_driver_by names both possible setters.
	old, err := Stack{CUDA: "12.2.2", MinDriver: "535.104.05"}.DriverFloors()
	if err != nil || old.Detail != "CUDA 12.2.2 or its frameworks' wheels" {
		t.Errorf("floors of a stack without min_driver_by: %+v, %v", old, err)
	}
	if _, err := (Stack{MinDriver: "new"}).DriverFloors(); err == nil {
		t.Error("a stack without a readable floor has floors")
	}
}

func TestDriverFloorsFor(t *testing.T) {
	db, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	f := db.DriverFloorsFor(MustVersion("12.2"))
	if f.Strict.String() != "535.104.05" || f.Compat.String() != "525.60.13" || f.Of != "CUDA 12.2" {
		t.Errorf("DriverFloorsFor(12.2) = %+v", f)
	}
	// CUDA 11.0's own floor is below its family's compatibility floor:
	// the compat floor is never above the strict one.
	f = db.DriverFloorsFor(MustVersion("11.0"))
	if f.Strict.IsZero() || f.Compat.Compare(f.Strict) != 0 {
		t.Errorf("DriverFloorsFor(11.0) = strict %s, compat %s; want compat = strict", f.Strict, f.Compat)
	}
}

func TestParseRequireCUDA(t *testing.T) {
	for _, tt := range []struct {
		req  string
		want string
		ok   bool
	}{
		{"cuda>=12.2", "12.2", true},
		{"cuda>=11.8 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471", "11.8", true},
		{"brand=tesla,driver>=470", "", false},
		{"", "", false},
		{"cuda>=twelve", "", false},
		// Alternatives: the runtime starts the image where the first holds
		// (libnvidia-container dsl.c L156-157), so the floor is the lower.
		{"cuda>=12.0 cuda>=12.4", "12.0", true},
	} {
		v, ok := ParseRequireCUDA(tt.req)
		if ok != tt.ok || (ok && v.String() != tt.want) {
			t.Errorf("ParseRequireCUDA(%q) = %v %v, want %s %v", tt.req, v, ok, tt.want, tt.ok)
		}
	}
	if got := RequireCUDA(MustVersion("12.2")); got != "cuda>=12.2" {
		t.Errorf("RequireCUDA = %q", got)
	}
}

func TestStackLabelRoundTrip(t *testing.T) {
	s := Stack{CUDA: "12.2.2", Python: "3.10", OS: "ubuntu22.04", MinDriver: "535.104.05",
		Frameworks: map[string]Framework{"torch": {Version: "2.3.1", CUDA: "12.1", Packages: []string{"torch==2.3.1"}, IndexURL: "https://download.pytorch.org/whl/cu121?a=1&b=<2>"}}}
	v, err := s.LabelValue()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v, "\n") || strings.Contains(v, `\u0026`) || !strings.Contains(v, "&b=<2>") {
		t.Errorf("label value is not one unescaped line: %s", v)
	}
	got, ok, err := StackFromLabels(map[string]string{StackLabel: v})
	if !ok || err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("StackFromLabels = %+v %v %v, want %+v", got, ok, err, s)
	}
	if _, ok, err := StackFromLabels(map[string]string{"other": "x"}); ok || err != nil {
		t.Errorf("no label: ok=%v err=%v", ok, err)
	}
	if _, ok, err := StackFromLabels(map[string]string{StackLabel: "{not json"}); !ok || err == nil || !strings.Contains(err.Error(), "label dev.gpuimg.stack is not a stack") {
		t.Errorf("bad label: ok=%v err=%v", ok, err)
	}
}

func TestStackTagAndSummary(t *testing.T) {
	s := Stack{CUDA: "12.2.2", Python: "3.10", OS: "ubuntu22.04", MinDriver: "535.104.05", Frameworks: map[string]Framework{
		"jax": {Version: "0.4.30", CUDA: "12.3"}, "torch": {Version: "2.3.1", CUDA: "12.1"}, "tensorflow": {Version: "2.16.1", CUDA: "12.3"},
	}}
	if got, want := s.Tag(), "cuda12.2.2-torch2.3.1-tensorflow2.16.1-jax0.4.30-py3.10"; got != want {
		t.Errorf("Tag = %q, want %q", got, want)
	}
	if got, want := s.Summary(), "CUDA 12.2.2, torch 2.3.1 (CUDA 12.1), tensorflow 2.16.1 (CUDA 12.3), jax 0.4.30 (CUDA 12.3), Python 3.10, ubuntu22.04, driver >= 535.104.05"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	if got, want := s.Short(), "torch 2.3.1 tensorflow 2.16.1 jax 0.4.30 cu122 py3.10"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	if got := CUDATag(MustVersion("12.1.1")); got != "121" {
		t.Errorf("CUDATag(12.1.1) = %q", got)
	}
	if got := FrameworkNames(); !reflect.DeepEqual(got, []string{"torch", "tensorflow", "jax"}) {
		t.Errorf("FrameworkNames = %v", got)
	}
}

func TestVerdict(t *testing.T) {
	for _, tt := range []struct {
		fs   []Finding
		want Status
	}{
		{nil, Pass},
		{[]Finding{{Status: Pass}, {Status: Warn}}, Pass},
		{[]Finding{{Status: Warn}, {Status: Fail}, {Status: Pass}}, Fail},
	} {
		if got := Verdict(tt.fs); got != tt.want {
			t.Errorf("Verdict(%v) = %s, want %s", tt.fs, got, tt.want)
		}
	}
}
