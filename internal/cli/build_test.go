package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/builder"
)

// TestBuildFlagKeys: every setting builder.Merge asks Given about is a
// flag of gpuimg build, so no flag silently loses to gpuimg.yaml.
func TestBuildFlagKeys(t *testing.T) {
	s, err := builder.Merge(builder.Flags{}, builder.Env{}, nil)
	must(t, err)
	cmd := newBuildCmd()
	for key := range s.Sources {
		if cmd.Flags().Lookup(buildFlag(key)) == nil {
			t.Errorf("setting %q: no flag --%s", key, buildFlag(key))
		}
	}
}

// TestBuildMergeErrors: gpuimg build merges its flags with gpuimg.yaml
// and the environment before it resolves or builds anything; a bad value
// says where it came from, with exit status 2.
func TestBuildMergeErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gpuimg.yaml")
	must(t, os.WriteFile(cfg, []byte("cuda: \"12.2\"\ntorch: \"2.3\"\npush: true\n"), 0o644))
	badCUDA := filepath.Join(t.TempDir(), "bad.yaml")
	must(t, os.WriteFile(badCUDA, []byte("cuda: \">=twelve\"\ntorch: \"2.3\"\n"), 0o644))
	t.Setenv("SOURCE_DATE_EPOCH", "yesterday")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", cfg, "--source-date-epoch", "1700000000"}, "push (set by gpuimg.yaml) needs a tag"},
		{[]string{"-f", cfg, "-t", "registry.example.com/ml/torch:2.3"}, `source date epoch "yesterday" (from the environment) is not a Unix time`},
		{[]string{"-f", cfg, "--source-date-epoch", "1", "--progress", "fancy"}, `progress mode "fancy"`},
		// --push=false beats gpuimg.yaml's push: true, --cuda its cuda.
		{[]string{"-f", cfg, "--source-date-epoch", "1", "--push=false", "--cuda", ">=twelve"}, "--cuda: constraint"},
		// A bad value from gpuimg.yaml is named by the file and key, not as a flag.
		{[]string{"-f", badCUDA, "--source-date-epoch", "1"}, badCUDA + `: cuda: constraint ">=twelve"`},
		{[]string{"-f", badCUDA, "--source-date-epoch", "1", "--cuda", "12.2", "--flavor", "slim"}, `--flavor: flavor "slim"`},
	} {
		_, errOut, code := run(t, append([]string{"build"}, tt.args...)...)
		if code != ExitInvalid || !strings.Contains(errOut, tt.want) {
			t.Errorf("build %v: exit %d %q, want %q", tt.args, code, errOut, tt.want)
		}
	}
}

// TestBuildTargetFromFile: gpuimg.yaml's target: reaches the resolver
// (a misspelt one is refused with the nearest names before anything is
// built), and --target wins over it.
func TestBuildTargetFromFile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "gpuimg.yaml")
	must(t, os.WriteFile(cfg, []byte("torch: latest\ntarget: sagemaker/p6\n"), 0o644))
	_, errOut, code := run(t, "build", "-f", cfg, "--dockerfile-only")
	if code != ExitInvalid || !strings.Contains(errOut, `unknown target "sagemaker/p6": did you mean`) {
		t.Errorf("target from gpuimg.yaml: exit %d %q", code, errOut)
	}
	_, errOut, code = run(t, "build", "-f", cfg, "--dockerfile-only", "--target", "gke/cos-lates")
	if code != ExitInvalid || !strings.Contains(errOut, `unknown target "gke/cos-lates"`) {
		t.Errorf("--target over gpuimg.yaml: exit %d %q", code, errOut)
	}
}

// TestTorchCompileFlag: --torch-compile is a boolean that defaults to
// true and sets builder.Flags.NoTorchCompile, its negation.
func TestTorchCompileFlag(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		no, set bool
		err     bool
	}{
		{nil, false, false, false},
		{[]string{"--torch-compile=false"}, true, true, false},
		{[]string{"--torch-compile"}, false, true, false},
		{[]string{"--torch-compile=true"}, false, true, false},
		{[]string{"--torch-compile=maybe"}, false, false, true},
	} {
		fs := pflag.NewFlagSet("build", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var f builder.Flags
		addTorchCompileFlag(fs, &f)
		err := fs.Parse(tt.args)
		if (err != nil) != tt.err {
			t.Fatalf("%v: err = %v, want error %v", tt.args, err, tt.err)
		}
		if tt.err {
			continue
		}
		if f.NoTorchCompile != tt.no || fs.Changed("torch-compile") != tt.set {
			t.Errorf("%v: NoTorchCompile = %v, changed = %v; want %v, %v", tt.args, f.NoTorchCompile, fs.Changed("torch-compile"), tt.no, tt.set)
		}
		if got := fs.Lookup("torch-compile").DefValue; got != "true" {
			t.Errorf("default %q, want true", got)
		}
	}
}

// TestTypedFlagValues: --copy and the single-value --platform are parsed
// as they are given (builder.ParseCopySpec, images.ParsePlatform): good
// values reach the options as written, a bad one stops the command line
// with the value's own error and exit status 2.
func TestTypedFlagValues(t *testing.T) {
	bo := &BuildOptions{}
	fs := pflag.NewFlagSet("build", pflag.ContinueOnError)
	bo.AddFlags(fs)
	must(t, fs.Parse([]string{"--copy", "app.py:/app/app.py", "--copy", "a:/b:c"}))
	if got := strings.Join(bo.Extras.Copy, " "); got != "app.py:/app/app.py a:/b:c" {
		t.Errorf("--copy gave %q", got)
	}
	if err := fs.Parse([]string{"--copy", "../x:/x"}); err == nil || !strings.Contains(err.Error(), `copy "../x:/x": the source must be inside the context directory`) {
		t.Errorf("--copy ../x:/x: %v", err)
	}

	vo := &ValidateOptions{}
	fs = pflag.NewFlagSet("validate", pflag.ContinueOnError)
	vo.AddFlags(fs)
	if vo.Platform.Get() != nil {
		t.Errorf("no --platform: %v, want none", vo.Platform.Get())
	}
	must(t, fs.Parse([]string{"--platform", "linux/arm64/v8"}))
	if p := vo.Platform.Get(); p == nil || p.Architecture != "arm64" || p.Variant != "v8" {
		t.Errorf("--platform linux/arm64/v8 gave %v", p)
	}

	for _, args := range [][]string{
		{"validate", "--platform", "linux/", "oci:nowhere"},
		{"images", "export", "--platform", "linux/", "oci:nowhere", "x.tar"},
		{"images", "convert", "--platform", "linux/", "oci:nowhere", "registry.example.com/x:y"},
	} {
		_, errOut, code := run(t, args...)
		if code != ExitInvalid || !strings.Contains(errOut, `gpuimg: --platform: platform "linux/" is not os/arch[/variant]`) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

// TestBuildAsksWhatToBuild checks that build reads ./gpuimg.yaml when -f
// is not given, refuses a build that names no stack, and refuses -t
// without --push or an --output before the base is pinned (the mirror
// is a closed port) and before a builder is dialled (so is --builder).
func TestBuildAsksWhatToBuild(t *testing.T) {
	const closed = "127.0.0.1:1"
	offline := []string{"--registry-mirror", "docker.io=" + closed, "--builder", "tcp://" + closed}
	for _, tc := range []struct {
		name     string
		file     string // ./gpuimg.yaml; "" for none
		args     []string
		code     int
		want     []string // in stderr
		dontWant string
	}{
		{"no stack", "", []string{"build", "-t", "registry.example.com/x:1", "--push"}, ExitInvalid,
			[]string{"gpuimg: build: no stack to build: no stack flag given and no ./gpuimg.yaml; name it with flags (gpuimg build --cuda 12.4"}, "gpuimg: stack"},
		{"no stack, dockerfile only", "", []string{"build", "--dockerfile-only"}, ExitInvalid,
			[]string{"no stack to build"}, "gpuimg: stack"},
		{"tag without push", "", []string{"build", "--cuda", "12.4", "-t", "registry.example.com/x:1"}, ExitInvalid,
			[]string{"gpuimg: --tag without --push keeps nothing (gpuimg's buildkitd has no local image store): add --push, or --output type=oci,dest=FILE\n"}, "gpuimg: stack"},
		{"tag without push from gpuimg.yaml", "cuda: \"12.4\"\ntag: [registry.example.com/x:1]\n", []string{"build"}, ExitInvalid,
			[]string{"gpuimg: reading ./gpuimg.yaml", "--tag without --push keeps nothing"}, "gpuimg: stack"},
		{"gpuimg.yaml read", "cuda: \"12.4\"\n", []string{"build", "--dockerfile-only"}, ExitInvalid,
			[]string{"gpuimg: reading ./gpuimg.yaml (-f FILE for another)\n", "gpuimg: stack CUDA 12.4"}, "no stack"},
		{"flags win over gpuimg.yaml", "cuda: \"12.4\"\n", []string{"build", "--dockerfile-only", "--cuda", "12.6"}, ExitInvalid,
			[]string{"gpuimg: stack CUDA 12.6"}, "gpuimg: stack CUDA 12.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				must(t, os.WriteFile(filepath.Join(dir, "gpuimg.yaml"), []byte(tc.file), 0o644))
			}
			t.Chdir(dir)
			out, errOut, code := run(t, append(tc.args, offline...)...)
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q", w)
				}
			}
			if code != tc.code || (tc.dontWant != "" && strings.Contains(errOut, tc.dontWant)) {
				t.Errorf("exit %d, want %d; stderr must not have %q", code, tc.code, tc.dontWant)
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
			}
		})
	}
}
