package pep508

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMarkerTarget: the cases of issue 43 (the old regular expression got
// each wrong) and the rest of the rule, for CPython 3.12 on Linux.
func TestMarkerTarget(t *testing.T) {
	x86 := LinuxEnv("x86_64", "3.12")
	arm := LinuxEnv("aarch64", "3.12")
	for _, c := range []struct {
		marker string
		env    Env
		want   bool
	}{
		// A Linux requirement that also names Windows is kept.
		{`sys_platform == "linux" or sys_platform == "win32"`, x86, true},
		// A Windows requirement is dropped.
		{`os_name == "nt"`, x86, false},
		{`platform_system == "Windows"`, x86, false},
		{`sys_platform != "linux"`, x86, false},
		// platform_machine matters: an aarch64-only pin is not an x86_64 pin.
		{`platform_machine == "aarch64" and platform_system == "Linux"`, x86, false},
		{`platform_machine == "aarch64" and platform_system == "Linux"`, arm, true},
		// Reversed operands.
		{`"cuda12" == extra`, x86.With("extra", "cuda12"), true},
		{`"cuda12" == extra`, x86.With("extra", ""), false},
		{`"linux" == sys_platform`, x86, true},
		{`"3.13" > python_version`, x86, true},
		// Extras compare normalized (PEP 685).
		{`extra == "With_CUDA"`, x86.With("extra", "with-cuda"), true},
		// Versions compare as PEP 440, not as strings ("3.9" > "3.12" as strings).
		{`python_version >= "3.9"`, x86, true},
		{`python_version < "3.10"`, x86, false},
		{`python_full_version >= "3.12.0rc1"`, x86, true},
		{`python_version == "3.12.*"`, x86, true},
		// Parentheses and precedence: and binds tighter than or.
		{`os_name == "nt" or os_name == "posix" and platform_machine == "x86_64"`, x86, true},
		{`(os_name == "nt" or os_name == "posix") and platform_machine == "aarch64"`, x86, false},
		// Legacy names.
		{`platform.machine == "x86_64" and os.name == "posix"`, x86, true},
		{`platform_python_implementation == "CPython" and implementation_name == "cpython"`, x86, true},
		{`"linux" in sys_platform`, x86, true},
		{`"win" not in sys_platform`, x86, true},
	} {
		m, err := ParseMarker(c.marker)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if got, err := m.Evaluate(c.env); err != nil || got != c.want {
			t.Errorf("%s = %v, %v; want %v", c.marker, got, err, c.want)
		}
	}
}

// TestMarkerUnknown: a variable the target does not give makes the
// outcome unknown, unless the rest decides it.
func TestMarkerUnknown(t *testing.T) {
	env := LinuxEnv("x86_64", "") // Python not known
	for _, c := range []struct {
		marker  string
		want    bool
		unknown []string
	}{
		{`python_version < "3.13"`, false, []string{"python_version"}},
		{`python_version < "3.13" and os_name == "nt"`, false, nil},
		{`python_version < "3.13" or os_name == "posix"`, true, nil},
		{`platform_release >= "5.10" and sys_platform == "linux"`, false, []string{"platform_release"}},
		{`extra == "cuda12"`, false, []string{"extra"}},
	} {
		got, err := mustMarker(t, c.marker).Evaluate(env)
		var ue *UnknownError
		errors.As(err, &ue)
		var vars []string
		if ue != nil {
			vars = ue.Variables
		}
		if got != c.want || !slices.Equal(vars, c.unknown) || (err != nil) != (c.unknown != nil) {
			t.Errorf("%s = %v, %v; want %v, unknown %v", c.marker, got, err, c.want, c.unknown)
		}
	}
}

func TestMarkerErrors(t *testing.T) {
	for _, s := range []string{
		`os_name = "nt"`, `os_name == "nt" and`, `(os_name == "nt"`, `os_name == 'C:\x'`,
		`os_name == "nt"` + "\n", `kernel == "linux"`, `os_name not  "x"`,
		strings.Repeat("(", 40) + `os_name == "nt"` + strings.Repeat(")", 40),
		strings.Repeat(`os_name == "nt" or `, 300) + `os_name == "nt"`,
	} {
		if m, err := ParseMarker(s); err == nil {
			t.Errorf("%q parsed as %v", s, m)
		}
	}
	if _, err := mustMarker(t, `"a" == "b"`).Evaluate(LinuxEnv("x86_64", "3.12")); err == nil {
		t.Error("a comparison of two strings evaluated")
	}
	if _, err := mustMarker(t, `"cuda" in extras`).Evaluate(LinuxEnv("x86_64", "3.12")); err == nil {
		t.Error("the lock-file variable extras evaluated in a requirement")
	}
}

func TestMarkerExtras(t *testing.T) {
	m := mustMarker(t, `(extra == "cuda12" or "cuda13" == extra) and sys_platform == "linux"`)
	if got := m.Extras(); !slices.Equal(got, []string{"cuda12", "cuda13"}) {
		t.Errorf("Extras = %q", got)
	}
	if (Marker{}).Extras() != nil {
		t.Error("the zero Marker names extras")
	}
	if ok, err := (Marker{}).Evaluate(Env{}); !ok || err != nil {
		t.Error("the zero Marker does not hold")
	}
}

// FuzzParseMarker: any string; what parses evaluates the same twice and
// names the same extras, and parsing and evaluating take time linear in
// the input (2 s + 20 µs a byte, as docs/fuzzing.md's other targets).
func FuzzParseMarker(f *testing.F) {
	for _, s := range []string{`os_name == "nt"`, `(extra == "a" or python_version < "3.9") and "x" in sys_platform`, `platform.machine not in 'x'`,
		`sys_platform == "linux" or sys_platform == "win32"`, `"cuda12" == extra`, `python_full_version >= "3.12.0rc1" and platform_release >= "5"`} {
		f.Add(s)
	}
	env := LinuxEnv("x86_64", "3.12").With("extra", "a")
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		m, err := ParseMarker(s)
		if err != nil {
			return
		}
		ok1, err1 := m.Evaluate(env)
		ok2, err2 := m.Evaluate(env)
		if ok1 != ok2 || (err1 == nil) != (err2 == nil) || !slices.Equal(m.Extras(), m.Extras()) {
			t.Fatalf("%q evaluates differently twice: %v %v, %v %v", s, ok1, err1, ok2, err2)
		}
		if took, limit := time.Since(start), 2*time.Second+time.Duration(len(s))*20*time.Microsecond; took > limit {
			t.Fatalf("%d bytes took %v (limit %v)", len(s), took, limit)
		}
	})
}
