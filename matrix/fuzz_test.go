package matrix

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// withinTime fails when f runs longer than a budget linear in n.
func withinTime(t *testing.T, n int, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took, limit := time.Since(start), 2*time.Second+time.Duration(n)*20*time.Microsecond; took > limit {
		t.Fatalf("%d bytes of input took %v (limit %v)", n, took, limit)
	}
}

// FuzzParseRequireCUDA: NVIDIA_REQUIRE_CUDA values, as images carry them.
// The runtime's evaluation (Requirement.Outcomes, which walks the value
// backwards once) answers as dsl_evaluate's forward loops do
// (dslEvaluate, below) on hosts whose facts are all known; an unknown
// fact only adds answers; the CUDA floor gpuimg's own value for it reads
// back the same.
func FuzzParseRequireCUDA(f *testing.F) {
	for _, s := range []string{
		"cuda>=12.2 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471",
		"cuda>=11.8", "cuda>=12.4 brand=tesla,driver>=535,driver<536", "cuda>=", "cuda>=x cuda>=12", "brand=tesla", "",
		"cuda>=12.0 bogus>=1", "cuda>=12.4 , cuda>=12.0", "cuda!12.0", "cuda>=.5", "arch>=8.0,brand!=geforce", ",",
	} {
		f.Add(s)
	}
	hosts := []RuntimeHost{
		{Driver: MustVersion("535.104.05"), CUDA: MustVersion("12.2"), Arch: "9.0", Brand: "Tesla"},
		{Driver: MustVersion("470.82.01"), CUDA: MustVersion("11.4"), Arch: "8.0", Brand: "GeForce"},
		{Driver: MustVersion("580.65.06"), CUDA: MustVersion("13.0"), Arch: "12.0", Brand: "NVIDIA"},
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v Version
		var ok bool
		withinTime(t, len(s), func() { v, ok = ParseRequireCUDA(s) })
		r := ParseRequirement(s)
		for _, h := range hosts {
			var got Outcomes
			withinTime(t, len(s), func() { got = r.Outcomes(h) })
			if want := dslEvaluate(s, h); got != Outcomes(want) {
				t.Fatalf("%q on %+v: Outcomes = %03b, dsl_evaluate = %03b", s, h, got, want)
			}
			for _, unknown := range []func(*RuntimeHost){
				func(h *RuntimeHost) { h.Brand = "" },
				func(h *RuntimeHost) { h.Arch = "" },
				func(h *RuntimeHost) { h.CUDA = Version{} },
			} {
				u := h
				unknown(&u)
				var wide Outcomes
				withinTime(t, len(s), func() { wide = r.Outcomes(u) })
				if wide&got != got {
					t.Fatalf("%q: on %+v %03b, but with a fact unknown %03b", s, h, got, wide)
				}
			}
		}
		if !ok {
			return
		}
		back, ok := ParseRequireCUDA(RequireCUDA(v))
		if !ok || back.Compare(v) != 0 {
			t.Fatalf("%q: RequireCUDA(%s) = %q reads back as %s %v", s, v, RequireCUDA(v), back, ok)
		}
	})
}

// dslEvaluate is libnvidia-container's dsl_evaluate and evaluate_rule
// (src/cli/dsl.c at 5823754b, L91-177) and configure.c's rules, written
// as their loops run, for a host whose facts are all known: the reference
// Requirement.Outcomes is fuzzed against.
func dslEvaluate(pred string, h RuntimeHost) Outcome {
	rule := func(expr string) int {
		n := strings.IndexAny(expr, "<>=!")
		if n == 0 {
			return -1
		}
		if n < 0 {
			return -1
		}
		prop, rest := expr[:n], expr[n:]
		m := 0
		for m < len(rest) && strings.ContainsRune("<>=!", rune(rest[m])) {
			m++
		}
		var op string
		for _, o := range []string{"=", "!=", "<", "<=", ">", ">="} {
			if len(o) >= m && o[:m] == rest[:m] {
				op = o
				break
			}
		}
		val := rest[m:]
		if op == "" || val == "" {
			return -1
		}
		var ret int
		switch {
		case asciiEqualFold(prop, "cuda"):
			ret = dslCompareVersion(fmt.Sprintf("%d.%d", h.CUDA.Major(), h.CUDA.Minor()), op, val)
		case asciiEqualFold(prop, "driver"):
			ret = dslCompareVersion(h.Driver.String(), op, val)
		case asciiEqualFold(prop, "arch"):
			ret = dslCompareVersion(h.Arch, op, val)
		case asciiEqualFold(prop, "brand"):
			switch op {
			case "=":
				ret = 0
				if asciiEqualFold(h.Brand, val) {
					ret = 1
				}
			case "!=":
				ret = 1
				if asciiEqualFold(h.Brand, val) {
					ret = 0
				}
			default:
				ret = -1
			}
		default:
			return -1
		}
		if ret == 0 && len(fmt.Sprintf("%s %s %s", prop, op, val)) >= 128 {
			return -1
		}
		return ret
	}
	ret := 1
	for or := range strings.SplitSeq(pred, " ") {
		if or == "" {
			continue
		}
		all := true
		for and := range strings.SplitSeq(or, ",") {
			if and == "" {
				continue
			}
			if ret = rule(and); ret < 0 {
				return Invalid
			}
			if ret == 0 {
				all = false
				break
			}
		}
		if all {
			break
		}
	}
	if ret == 0 {
		return Unsatisfied
	}
	return Holds
}

// FuzzParseFile: --matrix-file YAML, decoded strictly. Seeds are the
// built-in data files, the test world and the example internal matrix.
func FuzzParseFile(f *testing.F) {
	seeds, _ := filepath.Glob("data/*.yaml")
	seeds = append(seeds, "testdata/world.yaml", "../examples/matrix-internal.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("cuda: [{version: 12.2.2, min_driver: 535.104.05}]\nunknown: 1\n"))
	f.Add([]byte("a: &a [*a, *a, *a]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		withinTime(t, len(b), func() {
			file, err := ParseFile("fuzz.yaml", b)
			if err == nil && file == nil {
				t.Fatal("no file and no error")
			}
			if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
		})
	})
}
