package cli

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// Temporary: compile on vs off cost. Not committed.
func TestZZMeasureCompile(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip()
	}
	ctx := t.Context()
	env := startEnv(t, "gm-")
	_, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04")
	must(t, err)
	must(t, env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"))
	other, err := env.StartBuildKit(ctx, "m2")
	must(t, err)
	t.Cleanup(func() { _ = other.Stop(ctx) })
	build := func(addr, tag string, more ...string) {
		t.Helper()
		start := time.Now()
		args := append([]string{"build", "--cuda", "12.2", "--torch", "2.3",
			"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--builder", addr,
			"-t", env.Registry.Host + "/gpuimg/m:" + tag, "--push", "--progress", "plain", "-o", "json"}, more...)
		out, errOut, code := run(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, lastLines(errOut, 40))
		}
		_ = os.WriteFile("/tmp/measure-"+tag+".log", []byte(errOut), 0o644)
		var res struct{ Digest string }
		_ = json.Unmarshal([]byte(out), &res)
		t.Logf("MEASURE %s: %s (%s)", tag, time.Since(start).Round(100*time.Millisecond), res.Digest)
	}
	build(env.BuildKit.Address(), "off-cold", "--torch-compile=false")
	build(env.BuildKit.Address(), "off-warm", "--torch-compile=false")
	build(other.Address(), "on-cold")
	build(other.Address(), "on-warm")
}
