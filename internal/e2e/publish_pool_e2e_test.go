package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// killOnLine is the stderr of a publish run: it keeps what is written, and
// the first time a line contains trigger it calls kill.
type killOnLine struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	trigger string
	kill    func()
	fired   bool
}

func (k *killOnLine) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.buf.Write(p)
	if !k.fired && strings.Contains(k.buf.String(), k.trigger) {
		k.fired = true
		k.kill()
	}
	return len(p), nil
}

func (k *killOnLine) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.buf.String()
}

// testPublishPool publishes a matrix of 6 valid variants (CUDA 12.1, 12.2,
// 12.4 × PyTorch 2.2, 2.3, Python 3.11) and 6 the resolver refuses (Python
// 3.7: torch 2.2 and 2.3 need 3.8 or later, and no OS or standalone
// CPython of the matrix has it; 3.10, which the fixture OS lacks, would
// now come from a standalone CPython, out of the test's reach) on a pool of 3 real buildkitds: env's
// and two more, each with its own state and socket. Each CUDA is its own
// base image, so each builder gets one group of 2 variants sharing layers.
// The third builder is killed (SIGKILL, by PID) when it starts its first
// variant: its variants finish on the others, with a note in the report.
// The registry is checked with crane: digests, the dev.gpuimg.inputs label,
// the mirror and the promoted tags. A rerun on builders that do not exist
// finds every variant unchanged. Then the CUDA 12.1 base moves to a new
// digest and torch 2.2.2's wheels leave the index: only the two 12.1
// variants rebuild, torch 2.3.1's is published, torch 2.2.2's fails in pip
// and none of its tags moves; the run exits 1.
func testPublishPool(t *testing.T, env *testenv.Env) {
	ctx := t.Context()
	t0 := time.Now()
	for _, tag := range []string{"nvidia/cuda:12.1.1-base-ubuntu22.04", "nvidia/cuda:12.2.2-base-ubuntu22.04", "nvidia/cuda:12.4.1-base-ubuntu22.04"} {
		if _, err := env.PushBase(ctx, tag); err != nil {
			t.Fatal(err)
		}
	}
	must(t, env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"))
	must(t, env.TorchWheels("2.2.2", "0.17.2", "2.2.2", "12.1"))
	pool := []*builder.Local{env.BuildKit}
	for _, n := range []string{"bk1", "bk2"} {
		l, err := env.StartBuildKit(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := l.Stop(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("stop buildkitd %s: %v", n, err)
			}
		})
		pool = append(pool, l)
	}
	victim := pool[2]
	victimPID, ok := victim.Running()
	if !ok {
		t.Fatal("the third buildkitd does not run")
	}

	dir := t.TempDir()
	repo := env.Registry.Host + "/gpuimg/pool"
	mirror := env.Registry.Host + "/gpuimg/pool-mirror"
	file := filepath.Join(dir, "publish.yaml")
	must(t, os.WriteFile(file, []byte(`repository: `+repo+`
tag: "{torch}-cu{cuda_short}-py{python}"
matrix:
  cuda: ["12.1", "12.2", "12.4"]
  torch: ["2.2", "2.3"]
  python: ["3.7", "3.11"]
validate: {driver: 550.54.15, gpu: [h100]}
mirrors: [`+mirror+`]
promote: {tags: ["{torch}-cu{cuda_short}", "latest"]}
`), 0o644))
	// A registry cache shared by the pool: each variant exports to
	// pool-cache:buildcache-NAME and imports its group's.
	cacheRef := env.Registry.Host + "/gpuimg/pool-cache:buildcache"
	args := func(reportDir string, builders ...string) []string {
		// --torch-compile=false: as TestPublishEndToEnd's.
		a := []string{"publish", "-f", file, "--torch-compile=false", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--report-dir", reportDir, "--progress", "plain",
			"--cache-to", "type=registry,ref=" + cacheRef + ",mode=max", "--cache-from", "type=registry,ref=" + cacheRef}
		for _, b := range builders {
			a = append(a, "--builder", b)
		}
		return a
	}
	crane := func(a ...string) (string, error) {
		out, err := exec.CommandContext(ctx, env.Tools.Crane, append(a, "--insecure")...).Output()
		return strings.TrimSpace(string(out)), err
	}
	digest := func(ref string) string {
		d, err := crane("digest", ref)
		if err != nil {
			return "none (" + err.Error() + ")"
		}
		return d
	}
	inputsLabel := func(ref string) string {
		out, err := crane("config", ref)
		if err != nil {
			t.Errorf("crane config %s: %v", ref, err)
			return ""
		}
		var cfg struct {
			Config struct{ Labels map[string]string }
		}
		must(t, json.Unmarshal([]byte(out), &cfg))
		return cfg.Config.Labels[publish.InputsLabel]
	}
	byName := func(rep *publish.Report) map[string]publish.Result {
		m := map[string]publish.Result{}
		for _, r := range rep.Results {
			m[r.Variant.Name] = r
		}
		return m
	}
	names := []string{"2.2.2-cu121-py3.11", "2.3.1-cu121-py3.11", "2.2.2-cu122-py3.11", "2.3.1-cu122-py3.11", "2.2.2-cu124-py3.11", "2.3.1-cu124-py3.11"}

	// First run: the third builder dies as its first variant starts.
	first := filepath.Join(dir, "first")
	stderr := &killOnLine{trigger: "building on " + victim.Address(), kill: func() {
		if err := syscall.Kill(victimPID, syscall.SIGKILL); err != nil {
			t.Errorf("kill buildkitd %d: %v", victimPID, err)
		}
	}}
	var stdout bytes.Buffer
	code := cli.Main(ctx, args(first, pool[0].Address(), pool[1].Address(), victim.Address()), &stdout, stderr)
	errOut := stderr.String()
	if code != 0 {
		t.Fatalf("first publish exited %d:\n%s\n%s", code, stdout.String(), lastLines(errOut, 40))
	}
	if !stderr.fired {
		t.Fatalf("no variant started on the third builder %s:\n%s", victim.Address(), lastLines(errOut, 40))
	}
	t.Logf("first run (%s):\n%s", time.Since(t0).Round(time.Second), grepLines(errOut, victim.Address()))
	rep, err := publish.ReadReport(filepath.Join(first, publish.ReportJSON))
	must(t, err)
	res := byName(rep)
	if len(rep.Results) != len(names) || len(rep.Skipped) != 6 {
		t.Fatalf("first run: %d results, %d skipped; want %d and 6 (Python 3.7 refused): %+v %+v", len(rep.Results), len(rep.Skipped), len(names), rep.Results, rep.Skipped)
	}
	for _, s := range rep.Skipped {
		if s.Axes["python"] != "3.7" || !strings.Contains(s.Reason, "no Python fits") {
			t.Errorf("skipped %v: %q, want the resolver's refusal of Python 3.7", s.Axes, s.Reason)
		}
	}
	moved, used := 0, map[string]int{}
	for _, n := range names {
		r, ok := res[n]
		if !ok {
			t.Errorf("no result for %s", n)
			continue
		}
		used[r.Builder]++
		if r.Outcome != publish.Published || r.Digest == "" {
			t.Errorf("%s: outcome %s digest %q error %q", n, r.Outcome, r.Digest, r.Error)
			continue
		}
		if r.Builder == victim.Address() {
			t.Errorf("%s: finished on the killed builder", n)
		}
		if len(r.Notes) > 0 {
			moved++
			if !strings.Contains(r.Notes[0], "builder "+victim.Address()+" failed") {
				t.Errorf("%s: note %q does not name the killed builder", n, r.Notes[0])
			}
		}
		for _, ref := range []string{r.Variant.Tag, mirror + ":" + n, repo + ":" + strings.TrimSuffix(n, "-py3.11")} {
			if d := digest(ref); d != r.Digest {
				t.Errorf("crane digest %s = %s, report %s", ref, d, r.Digest)
			}
		}
		if l := inputsLabel(r.Variant.Tag); l != r.Variant.Inputs || l == "" {
			t.Errorf("%s: label %s = %q, report %q", r.Variant.Tag, publish.InputsLabel, l, r.Variant.Inputs)
		}
	}
	// The second builder started empty: its first variant found no step
	// in its cache (the frontend's own vertices, "[internal] load …", are
	// not counted), the second reused the steps they share (FROM, the
	// venv).
	if a, b := res["2.2.2-cu122-py3.11"], res["2.3.1-cu122-py3.11"]; a.Builder != pool[1].Address() || b.Builder != a.Builder ||
		a.TotalSteps == 0 || a.CachedSteps != 0 || b.CachedSteps == 0 || b.CachedSteps >= b.TotalSteps {
		t.Errorf("on the empty builder %s: %s on %s, %d/%d steps cached (want 0); then %s on %s, %d/%d (want some, not all)",
			pool[1].Address(), a.Variant.Name, a.Builder, a.CachedSteps, a.TotalSteps, b.Variant.Name, b.Builder, b.CachedSteps, b.TotalSteps)
	}
	// The killed builder's group (CUDA 12.4, 2 variants) moved to the others.
	if moved != 2 || used[pool[0].Address()] == 0 || used[pool[1].Address()] == 0 {
		t.Errorf("%d variants moved (want 2: the killed builder's); builders used %v", moved, used)
	}
	if !strings.Contains(errOut, "builder "+victim.Address()+" failed") {
		t.Errorf("progress does not report the killed builder:\n%s", lastLines(errOut, 20))
	}
	if d := digest(repo + ":latest"); d != res["2.3.1-cu124-py3.11"].Digest {
		t.Errorf("latest -> %s, want the plan's last variant %s", d, res["2.3.1-cu124-py3.11"].Digest)
	}

	// Rerun on builders that do not exist: any solve would fail the run.
	nowhere := "unix://" + filepath.Join(dir, "no-buildkitd.sock")
	t1 := time.Now()
	out, errOut2, code := run(t, args(filepath.Join(dir, "second"), nowhere)...)
	if code != 0 {
		t.Fatalf("rerun exited %d:\n%s\n%s", code, out, lastLines(errOut2, 40))
	}
	rep2, err := publish.ReadReport(filepath.Join(dir, "second", publish.ReportJSON))
	must(t, err)
	for _, r := range rep2.Results {
		if r.Outcome != publish.Unchanged || r.Digest != res[r.Variant.Name].Digest || r.Builder != "" {
			t.Errorf("rerun, %s: outcome %s digest %s builder %q", r.Variant.Name, r.Outcome, r.Digest, r.Builder)
		}
	}
	t.Logf("rerun: %d variants unchanged in %s", len(rep2.Results), time.Since(t1).Round(100*time.Millisecond))

	// The registry cache: one variant rebuilt (--force) on a builder that
	// never built its base (the second: env's builder built CUDA 12.2 in
	// the first half of the test) finds its steps in the cache the first
	// builder exported, and gives the same image.
	shared := "2.3.1-cu121-py3.11"
	other := pool[1].Address()
	for _, r := range rep.Results {
		if r.Builder == other && r.Variant.Stack.BaseImage == res[shared].Variant.Stack.BaseImage {
			t.Fatalf("%s also built %s's base (%s): pick a builder that did not", other, shared, r.Variant.Name)
		}
	}
	out, errOut4, code := run(t, append(args(filepath.Join(dir, "cached"), other), "--force", "--only", shared)...)
	if code != 0 {
		t.Fatalf("forced rebuild of %s on %s exited %d:\n%s\n%s", shared, other, code, out, lastLines(errOut4, 40))
	}
	rep4, err := publish.ReadReport(filepath.Join(dir, "cached", publish.ReportJSON))
	must(t, err)
	// The FROM of a build answered from the cache is not pulled, and not
	// reported cached: every other step is, in the plan's solve and the
	// layered one (the variant imports its own cache alone: with its
	// group mate's too, BuildKit could follow the shared steps into the
	// mate's cache and rebuild the variant's pip install).
	if r := rep4.Results[0]; r.Outcome != publish.Published || r.Builder != other || r.TotalSteps < 4 || r.CachedSteps != r.TotalSteps-1 || r.Digest != res[shared].Digest {
		t.Errorf("%s rebuilt on %s: outcome %s builder %s, %d/%d steps cached (want all but the FROM, from the registry cache), digest %s (first built %s), error %q",
			shared, other, r.Outcome, r.Builder, r.CachedSteps, r.TotalSteps, r.Digest, res[shared].Digest, r.Error)
	} else {
		t.Logf("%s rebuilt on %s from the registry cache: %d/%d steps cached, same digest", shared, other, r.CachedSteps, r.TotalSteps)
	}

	// The CUDA 12.1 base moves; torch 2.2.2 leaves the index.
	oldBase := digest(env.Registry.Host + "/nvidia/cuda:12.1.1-base-ubuntu22.04")
	newBase, err := env.PushBaseLabeled(ctx, "nvidia/cuda:12.1.1-base-ubuntu22.04", map[string]string{"dev.gpuimg.test": "moved"})
	must(t, err)
	if newBase == oldBase {
		t.Fatalf("the moved base kept its digest %s", oldBase)
	}
	wheels, err := filepath.Glob(filepath.Join(env.WheelDir, "torch*-2.2.2+cu121-*.whl"))
	must(t, err)
	if len(wheels) != 2 { // torch and torchaudio; torchvision is 0.17.2
		t.Fatalf("torch 2.2.2 wheels: %v", wheels)
	}
	for _, w := range wheels {
		must(t, os.Remove(w))
	}
	third := filepath.Join(dir, "third")
	out, errOut3, code := run(t, args(third, pool[0].Address(), pool[1].Address())...)
	if code != cli.ExitFailed {
		t.Fatalf("publish with a failing variant exited %d, want %d:\n%s\n%s", code, cli.ExitFailed, out, lastLines(errOut3, 40))
	}
	t.Logf("after the base moved:\n%s", lastLines(errOut3, 8))
	rep3, err := publish.ReadReport(filepath.Join(third, publish.ReportJSON))
	must(t, err)
	res3 := byName(rep3)
	for _, n := range names {
		r, old := res3[n], res[n]
		switch n {
		case "2.2.2-cu121-py3.11":
			if r.Outcome != publish.Failed || !strings.Contains(r.Error, "pip install") || !strings.Contains(r.Error, "torch==2.2.2") {
				t.Errorf("%s: outcome %s error %q, want a failed pip install", n, r.Outcome, r.Error)
			}
			for _, ref := range []string{r.Variant.Tag, mirror + ":" + n, repo + ":2.2.2-cu121"} {
				if d := digest(ref); d != old.Digest {
					t.Errorf("the failed variant's tag %s moved: %s, was %s", ref, d, old.Digest)
				}
			}
		case "2.3.1-cu121-py3.11":
			if r.Outcome != publish.Published || r.Digest == old.Digest || r.Builder == "" {
				t.Errorf("%s: outcome %s digest %s (was %s) error %q, want rebuilt on the moved base", n, r.Outcome, r.Digest, old.Digest, r.Error)
			}
			for _, ref := range []string{r.Variant.Tag, mirror + ":" + n, repo + ":2.3.1-cu121"} {
				if d := digest(ref); d != r.Digest {
					t.Errorf("crane digest %s = %s, report %s", ref, d, r.Digest)
				}
			}
			if l := inputsLabel(r.Variant.Tag); l != r.Variant.Inputs || l == old.Variant.Inputs {
				t.Errorf("%s: inputs label %q, report %q, before %q", n, l, r.Variant.Inputs, old.Variant.Inputs)
			}
		default:
			if r.Outcome != publish.Unchanged || r.Digest != old.Digest || r.Builder != "" {
				t.Errorf("%s: outcome %s digest %s builder %q, want unchanged (its base did not move)", n, r.Outcome, r.Digest, r.Builder)
			}
		}
	}
	if !strings.Contains(errOut3, "2.2.2-cu121-py3.11") {
		t.Errorf("stderr does not name the failed variant:\n%s", lastLines(errOut3, 10))
	}
	md, err := os.ReadFile(filepath.Join(third, publish.ReportMarkdown))
	must(t, err)
	if !strings.Contains(string(md), "2.2.2-cu121-py3.11") || !strings.Contains(string(md), "failed") {
		t.Errorf("report.md does not show the failure:\n%s", md)
	}
	t.Logf("pool scenario: %s", time.Since(t0).Round(time.Second))
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimRight(l, "\n"))
		}
	}
	return strings.Join(out, "\n")
}
