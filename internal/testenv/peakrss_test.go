package testenv

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// TestMeasure checks the go-between against the effect it exists for:
// after this test has touched 300 MiB, the rusage it reads for a direct
// child that uses a few MiB says over 300 MiB, while Measure gives the
// child's own few. A child that touches 200 MiB is measured as such, and
// exit codes pass through.
func TestMeasure(t *testing.T) {
	Require(t, "touches 300 MiB", Slow)
	ctx := t.Context()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	dir := t.TempDir()
	measure := func(code string) (int64, int) {
		t.Helper()
		m, err := Measure(ctx, dir, py, "-c", code)
		if err != nil {
			t.Fatal(err)
		}
		_ = m.Run()
		rss, err := m.MaxRSS()
		if err != nil {
			t.Fatal(err)
		}
		return rss, m.ProcessState.ExitCode()
	}
	ballast := make([]byte, 300<<20)
	for i := range ballast {
		ballast[i] = 1
	}
	direct := exec.Command(py, "-c", "pass")
	if err := direct.Run(); err != nil {
		t.Fatal(err)
	}
	directRSS := direct.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	idle, _ := measure("pass")
	busy, _ := measure("b = bytearray(200 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1")
	_, code := measure("import sys; sys.exit(3)")
	runtime.KeepAlive(ballast)

	t.Logf("python3 -c pass: read directly %d MiB, through peakrss %d MiB; touching 200 MiB: %d MiB", directRSS>>20, idle>>20, busy>>20)
	if directRSS < 300<<20 {
		t.Logf("this kernel does not fold the parent's memory into a vforked child's max RSS")
	}
	if idle > 32<<20 {
		t.Errorf("python3 -c pass measured %d MiB through peakrss: the parent's memory leaks into the figure", idle>>20)
	}
	if busy < 200<<20 || busy > 264<<20 {
		t.Errorf("python3 touching 200 MiB measured %d MiB, want 200–264", busy>>20)
	}
	if code != 3 {
		t.Errorf("exit code through peakrss: %d, want 3", code)
	}
}
