package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestMain stops what the package's tests share (the environment of
// sharedEnv, the gpuimg binary of gpuimgBinary) after all of them ran.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(context.Background()); err != nil && code == 0 {
			os.Stderr.WriteString("e2e: stop the shared environment: " + err.Error() + "\n")
			code = 1
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	if testBinary.dir != "" {
		os.RemoveAll(testBinary.dir)
	}
	os.Exit(code)
}

// shared is the package's one environment, as BuildKit's integration
// tests share their daemons: a registry standing in for Docker Hub, the
// apt repository, one buildkitd (whose cache the tests then share) and
// the tools, started by the first test that asks and stopped by TestMain.
var shared struct {
	once sync.Once
	dir  string
	env  *testenv.Env
	err  error
}

// sharedEnv is a view of the shared environment for t (testenv's
// Env.View): the shared registry and buildkitd, with a directory, a wheel
// directory and an index of t's own, closed when t ends. Tests that use it
// push base tags with the same content (PushBase of the fixture rootfs is
// reproducible), and neither prune nor kill the shared buildkitd;
// those that would use ownEnv.
func sharedEnv(t *testing.T, prefix string) *testenv.Env {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("/tmp", "ge-"); shared.err != nil {
			return
		}
		// Not the test's context: the environment outlives the test that
		// starts it.
		shared.env, shared.err = testenv.Start(context.WithoutCancel(t.Context()), shared.dir)
	})
	if shared.err != nil {
		t.Fatalf("start the shared test environment: %v", shared.err)
	}
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	v, err := shared.env.View(dir)
	t.Cleanup(func() {
		if v != nil {
			_ = v.Stop(context.WithoutCancel(t.Context()))
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ownEnv starts an environment of the test's own (registry, buildkitd,
// index) under a short directory in /tmp (buildkitd's socket lives
// there), and stops it and removes the directory when the test ends: for
// a test that empties or kills its buildkitd, needs it fresh, or pushes
// a base tag differently from the others (see sharedEnv).
func ownEnv(t *testing.T, prefix string) *testenv.Env {
	t.Helper()
	ctx := t.Context()
	dir, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(ctx, dir)
	t.Cleanup(func() {
		if err := env.Stop(context.WithoutCancel(ctx)); err != nil { // nil-safe
			t.Errorf("stop test environment: %v", err)
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// gpuimgBinary builds the static gpuimg binary (as `make build` does)
// once for the whole package, to run as a user would (signals need a
// process of its own) or to mount into images as --probe-binary.
func gpuimgBinary(t *testing.T) string {
	t.Helper()
	testBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "gpuimg-bin-")
		if err != nil {
			testBinary.err = err
			return
		}
		testBinary.dir = dir
		bin := filepath.Join(dir, "gpuimg")
		// Not cancelled with t: the binary outlives the test that builds it.
		testBinary.err = testenv.GoBuild(context.WithoutCancel(t.Context()), "./cmd/gpuimg", bin)
		testBinary.path = bin
	})
	if testBinary.err != nil {
		t.Fatal(testBinary.err)
	}
	return testBinary.path
}

// testBinary is the gpuimg binary of this checkout, built once for every
// test of the package that runs it as a process (TestMain removes it).
var testBinary struct {
	once      sync.Once
	dir, path string
	err       error
}
