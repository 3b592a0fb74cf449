package builder

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/matrix"
)

var update = flag.Bool("update", false, "rewrite golden files")

func resolve(t *testing.T, c matrix.Constraints) matrix.Stack {
	t.Helper()
	db, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.Resolve(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func cons(s string) *matrix.Constraint { c := matrix.MustConstraint(s); return &c }

const pinned = "docker.io/nvidia/cuda:12.2.2-runtime-ubuntu22.04@sha256:0000000000000000000000000000000000000000000000000000000000000000"

func TestDockerfileGolden(t *testing.T) {
	tests := []struct {
		name string
		def  Definition
	}{
		{"torch-cu122", Definition{
			Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}),
			Base:  pinned,
		}},
		{"torch-extras-mirror-secrets", Definition{
			Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}),
			Base:  pinned,
			Extras: Extras{
				Pip:     []string{"numpy==1.26.4", "einops>=0.8"},
				Apt:     []string{"git", "curl"},
				Copy:    []string{"src:/app/src", "train.py:/app/train.py"},
				Env:     map[string]string{"HF_HOME": "/cache/hf", "PRICE": "$5 \"quoted\""},
				Workdir: "/app", Entrypoint: []string{"python", "/app/train.py"},
			},
			PipMirror: true, Secrets: []string{"netrc", "token"}, HasRequirements: true,
		}},
		{"tensorflow-rocky", Definition{
			Stack: resolve(t, matrix.Constraints{TensorFlow: cons("2.15"), OS: "rockylinux9"}),
			Base:  "docker.io/nvidia/cuda:12.2.2-runtime-rockylinux9@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		}},
		// No Ubuntu LTS with torch 2.7's CUDA images packages Python 3.13.
		{"torch-standalone-python", Definition{
			Stack:        resolve(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")}),
			Base:         "docker.io/nvidia/cuda:12.6.3-base-ubuntu24.04@sha256:3333333333333333333333333333333333333333333333333333333333333333",
			PythonMirror: "https://pbs-mirror.example.com/releases",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Dockerfile(tt.def)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Dockerfile(tt.def)
			if got != again {
				t.Fatal("Dockerfile is not deterministic")
			}
			golden := filepath.Join("testdata", tt.name+".Dockerfile")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./builder -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Dockerfile differs from %s (go test ./builder -update after checking):\n%s", golden, got)
			}
		})
	}
}

func TestDockerfileLayerOrder(t *testing.T) {
	df, err := Dockerfile(Definition{
		Stack:  resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}),
		Base:   pinned,
		Extras: Extras{Pip: []string{"numpy==1.26.4"}, Apt: []string{"git"}, Copy: []string{"a:/a"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"FROM ", "python3.10 -m venv", "torch==2.3.1", "install -y --no-install-recommends git", "numpy==1.26.4", "COPY --link"}
	last := -1
	for _, s := range order {
		i := strings.Index(df, s)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order (least to most often changing):\n%s", s, df)
		}
		last = i
	}
	for _, want := range []string{"ENV CUDA_VERSION=12.2.2", `NVIDIA_REQUIRE_CUDA="cuda>=12.2"`, "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", "--index-url https://download.pytorch.org/whl/cu121", "gpuimg-verify.py torch 2.3.1 12.1"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
}

func TestDockerfileRejects(t *testing.T) {
	s := resolve(t, matrix.Constraints{Torch: cons("2.3")})
	if _, err := Dockerfile(Definition{Stack: s, Base: "nvidia/cuda:12.2.2-runtime-ubuntu22.04"}); err == nil || !strings.Contains(err.Error(), "not pinned by digest") {
		t.Errorf("unpinned base: err = %v", err)
	}
	if _, err := Dockerfile(Definition{Stack: s, Base: pinned, Extras: Extras{Pip: []string{"--index-url=http://evil"}}}); err == nil {
		t.Error("a pip option smuggled as a requirement must be rejected")
	}
}

func TestExtrasValidate(t *testing.T) {
	tests := []struct {
		e    Extras
		want string
	}{
		{Extras{Pip: []string{"numpy==1.26.4", "jax[cuda12]==0.4.30", "einops>=0.8,<0.9", "requests"}}, ""},
		{Extras{Pip: []string{"numpy; rm -rf /"}}, "is not NAME or NAME==VERSION"},
		{Extras{Apt: []string{"git", "libcudnn8=8.9.7.29-1+cuda12.2"}}, ""},
		{Extras{Apt: []string{"git && curl"}}, "not a valid apt/dnf package name"},
		{Extras{Copy: []string{"src"}}, "want SRC:DST"},
		{Extras{Copy: []string{"src:app"}}, "absolute path"},
		{Extras{Copy: []string{"../secret:/x"}}, "inside the context"},
		{Extras{Copy: []string{"/etc/passwd:/x"}}, "inside the context"},
		{Extras{Copy: []string{"a/../../x:/x"}}, "inside the context"},
		{Extras{Copy: []string{"..data:/x", "a/..b:/app/..b"}}, ""},
		{Extras{Copy: []string{"app.py:/app/../etc/cron.d/app"}}, `must not contain ".."`},
		{Extras{Copy: []string{"app.py:/app/.."}}, `must not contain ".."`},
		{Extras{Env: map[string]string{"1BAD": "x"}}, "not valid"},
		{Extras{Workdir: "app"}, "absolute path"},
	}
	for _, tt := range tests {
		err := tt.e.Validate()
		if tt.want == "" && err != nil {
			t.Errorf("%+v: %v", tt.e, err)
		}
		if tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: err = %v, want %q", tt.e, err, tt.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", `cuda: "12.2"
torch: "2.3"
pip: [numpy==1.26.4]
apt: [git]
env: {HF_HOME: /cache}
entrypoint: [python, -m, app]
registry_mirrors: {docker.io: mirror.example.com}
tag: [registry.example.com/ml/torch:2.3]
push: true
`)
	c, err := LoadConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Stack[matrix.FieldCUDA] != "12.2" || c.Stack[matrix.FieldTorch] != "2.3" || len(c.Pip) != 1 || c.Env["HF_HOME"] != "/cache" || !c.Push || c.RegistryMirrors["docker.io"] != "mirror.example.com" {
		t.Errorf("config = %+v", c)
	}
	for body, want := range map[string]string{
		"cuda: 12.2\npyp: [numpy]\n":    "line 2: field pyp not found",
		"pip: numpy\n":                  "line 1: cannot unmarshal",
		"copy: [\"src:rel\"]\n":         "absolute path",
		"cuda: [\n":                     "bad.yaml",
		"push: maybe\n":                 "line 1: cannot unmarshal",
		"cuda: 12.2\n---\ntorch: 2.3\n": "bad.yaml: line 3: a second YAML document",
	} {
		p := write("bad.yaml", body)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", body, err, want)
		}
	}
	every, err := LoadConfig(write("every.yaml", "cuda: \"12.2\"\ncudnn: 9\ntorch: latest\ntensorflow: \"2.15\"\njax: 0.4.30\npython: \"3.11\"\n"+
		"os: ubuntu22.04\nflavor: devel\ngpu: a10g,l4\ndriver: 535.104.05\ntarget: sagemaker/p5\nmatrix_files: [rows.yaml]\n"))
	want := matrix.Spec{matrix.FieldCUDA: "12.2", matrix.FieldCuDNN: "9", matrix.FieldTorch: "latest", matrix.FieldTensorFlow: "2.15",
		matrix.FieldJAX: "0.4.30", matrix.FieldPython: "3.11", matrix.FieldOS: "ubuntu22.04", matrix.FieldFlavor: "devel",
		matrix.FieldGPU: "a10g,l4", matrix.FieldDriver: "535.104.05", matrix.FieldTarget: "sagemaker/p5"}
	if err != nil || every.Stack != want || len(every.MatrixFile) != 1 {
		t.Errorf("every stack key: %+v, %v", every, err)
	}
	// Every problem is named, in the file's order, stack keys included.
	_, err = LoadConfig(write("bad.yaml", "cuda: [12]\npyp: x\npip: numpy\n"))
	if err == nil || !regexp.MustCompile(`bad.yaml: line 1: cannot unmarshal !!seq .*; line 2: field pyp not found in type builder.Config; line 3: cannot unmarshal`).MatchString(err.Error()) {
		t.Errorf("three problems: %v", err)
	}
	if _, err := LoadConfig(write("empty.yaml", "")); err != nil {
		t.Errorf("empty config: %v", err)
	}
}

func TestLocalConfig(t *testing.T) {
	l := &Local{StateDir: "/x", Mirrors: images.Mirrors{"index.docker.io": "127.0.0.1:5000"}, InsecureRegistries: []string{"reg.internal:5000"}}
	got := string(l.config())
	for _, want := range []string{"[registry.\"docker.io\"]\n  mirrors = [\"127.0.0.1:5000\"]", "[registry.\"127.0.0.1:5000\"]\n  http = true", "[registry.\"reg.internal:5000\"]\n  http = true", "snapshotter = \"overlayfs\""} {
		if !strings.Contains(got, want) {
			t.Errorf("buildkitd.toml lacks %q:\n%s", want, got)
		}
	}
	long := &Local{StateDir: "/" + strings.Repeat("d", 120)}
	if len(long.socket()) >= 108 {
		t.Errorf("socket path %q is too long for a unix socket", long.socket())
	}
}

// TestDockerfileSyntax: both generated Dockerfiles name DockerfileSyntax
// as BuildKit's parser reads the directive, the named release is no older
// than the features the files use (the frontend reference's minimum
// versions), and every solve carries the "cmdline" attribute that keeps
// BuildKit's built-in frontend from forwarding to (pulling) that image.
func TestDockerfileSyntax(t *testing.T) {
	def := Definition{
		Stack:  resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}),
		Base:   pinned,
		Extras: Extras{Copy: []string{"a:/a"}},
	}
	plain, err := Dockerfile(def)
	must(t, err)
	layered, err := LayeredDockerfile(def, []PlannedDist{{Name: "torch", Version: "2.3.1", Step: 1, Size: 1e9}, {Name: "nvidia-cublas-cu12", Version: "12.1.3.1", Step: 1, Size: 1e9, Shared: true}}, 0)
	must(t, err)
	_, minor, ok := strings.Cut(strings.TrimPrefix(DockerfileSyntax, "docker/dockerfile:"), ".")
	floor, err := strconv.Atoi(minor)
	if !ok || err != nil {
		t.Fatalf("DockerfileSyntax %q is not docker/dockerfile:1.N", DockerfileSyntax)
	}
	// Minimum Dockerfile versions, from BuildKit's
	// frontend/dockerfile/docs/reference.md.
	needs := []struct {
		feature string
		minor   int
	}{{"RUN --mount=", 2}, {"COPY --link", 4}, {"COPY --link --from=" + UserContext, 4}, {"ARG SOURCE_DATE_EPOCH", 5}, {"ADD --checksum=", 6}, {" --unpack=", 17}}
	standalone, err := Dockerfile(Definition{Stack: standaloneStack(t, matrix.Constraints{Torch: cons("2.7"), Python: matrix.MustConstraint("3.13")}), Base: pinned})
	must(t, err)
	for name, df := range map[string]string{"Dockerfile": plain, "LayeredDockerfile": layered, "a standalone Python's Dockerfile": standalone} {
		ref, _, _, ok := parser.DetectSyntax([]byte(df))
		if !ok || ref != DockerfileSyntax {
			t.Errorf("%s: BuildKit reads syntax %q (found %v), want %q", name, ref, ok, DockerfileSyntax)
		}
		for _, n := range needs {
			if strings.Contains(df, n.feature) && n.minor > floor {
				t.Errorf("%s uses %s (Dockerfile 1.%d) but names %s", name, n.feature, n.minor, DockerfileSyntax)
			}
		}
	}
	if attrs := frontendAttrs(0); attrs["cmdline"] == "" {
		t.Errorf("frontend attributes %v lack cmdline: the built-in frontend would pull %s", attrs, DockerfileSyntax)
	}
}

// TestPackageStepsStripRunFiles: every RUN step that installs OS packages
// (the stack's Python on a base without it, and --apt) removes what the
// install writes that differs on every build, in the same step (a later
// step would leave it in the installing layer), after the install; apt's
// runs dpkg without a sync of every file (installCmd).
func TestPackageStepsStripRunFiles(t *testing.T) {
	for _, tt := range []struct {
		name, os, install string
		base              string
		want              []string
	}{
		{"apt", "", "apt-get install", pinned, []string{"/var/log/dpkg.log", "/var/log/apt/*", "/var/cache/ldconfig/aux-cache", "/var/log/alternatives.log"}},
		{"dnf", "rockylinux9", "dnf install", "docker.io/nvidia/cuda:12.2.2-runtime-rockylinux9@sha256:1111111111111111111111111111111111111111111111111111111111111111",
			[]string{"/var/log/dnf.log", "/var/log/dnf.rpm.log", "/var/lib/dnf/history*", "/var/cache/ldconfig/aux-cache"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			def := Definition{Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3"), OS: tt.os}), Base: tt.base, Extras: Extras{Apt: []string{"git"}}}
			plain, err := Dockerfile(def)
			must(t, err)
			layered, err := LayeredDockerfile(def, torchPlan, 0)
			must(t, err)
			for name, df := range map[string]string{"Dockerfile": plain, "LayeredDockerfile": layered} {
				res, err := parser.Parse(strings.NewReader(df))
				must(t, err)
				steps := 0
				for _, n := range res.AST.Children {
					if !strings.EqualFold(n.Value, "run") || !strings.Contains(n.Original, tt.install) {
						continue
					}
					steps++
					_, cmd, _ := strings.Cut(n.Original, tt.install)
					if tt.os == "" && !strings.Contains(cmd, " -o Dpkg::Options::=--force-unsafe-io ") {
						t.Errorf("%s: apt runs dpkg with its syncs of every file: %s", name, n.Original)
					}
					for _, f := range tt.want {
						if !strings.Contains(cmd, " "+f) || !strings.Contains(cmd, "rm -rf ") {
							t.Errorf("%s: a step installing packages leaves %s after it: %s", name, f, n.Original)
						}
					}
				}
				// The python step (twice in the layered build: the
				// frameworks' venv and the image's) and --apt.
				if min := 2; steps < min {
					t.Errorf("%s: %d steps with %s, want at least %d", name, steps, tt.install, min)
				}
			}
		})
	}
}

// TestPipUpgrade: the python stage upgrades the venv's pip to PipUpgrade
// exactly when it is older than 20.3 (focal's 20.0.2, EL8 python39's
// 20.2.4), before the framework steps; the check is the rendered one, run
// against pip packages of those versions.
func TestPipUpgrade(t *testing.T) {
	df, err := Dockerfile(Definition{Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3")}), Base: pinned})
	must(t, err)
	check := "if ! /opt/venv/bin/python -c " + quoteAll([]string{pipFloorCheck})[0] + "; then /opt/venv/bin/python -m pip install --disable-pip-version-check " + PipUpgrade + "; fi"
	i, venv, record, fw := strings.Index(df, check), strings.Index(df, "-m venv /opt/venv"), strings.Index(df, "gpuimg-plan.py record 0"), strings.Index(df, "FROM gpuimg-python AS gpuimg-frameworks")
	if i < 0 || venv >= i || i >= record || record >= fw {
		t.Fatalf("the pip upgrade is missing or not between the venv and the framework steps:\n%s", df)
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	for version, upgrade := range map[string]bool{"9.0.3": true, "20.0.2": true, "20.2.4": true, "20.3": false, "20.3.4": false, "22.0.2": false, "23.0.1": false, "24.0": false, "x.y": true} {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "pip"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "pip", "__init__.py"), []byte("__version__ = '"+version+"'\n"), 0o644))
		cmd := exec.Command(py, "-c", pipFloorCheck)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+dir)
		out, err := cmd.CombinedOutput()
		if got := err != nil; got != upgrade {
			t.Errorf("pip %s: upgrade %v, want %v (%s)", version, got, upgrade, out)
		}
	}
}

// TestFindLinks: a framework whose pins only a find-links page serves
// (JAX 0.4.17-0.4.29's cuda12_pip) gets --find-links in its step, with or
// without an index mirror; a configured find-links (pip.conf) replaces it.
func TestFindLinks(t *testing.T) {
	s := resolve(t, matrix.Constraints{JAX: cons("0.4.25")})
	page := s.Frameworks[matrix.FrameworkJAX].FindLinks
	if page == "" {
		t.Fatal("the jax 0.4.25 stack has no find-links page")
	}
	step := "pip install --disable-pip-version-check --find-links " + page + " 'jax[cuda12_pip]==0.4.25'"
	for _, tt := range []struct {
		name string
		def  Definition
		want bool
	}{
		{"PyPI", Definition{Stack: s, Base: pinned}, true},
		{"index mirror", Definition{Stack: s, Base: pinned, PipMirror: true}, true},
		{"find-links mirror", Definition{Stack: s, Base: pinned, PipMirror: true, PipFindLinks: true}, false},
	} {
		df, err := Dockerfile(tt.def)
		must(t, err)
		if got := strings.Contains(df, step); got != tt.want {
			t.Errorf("%s: step with --find-links %v, want %v:\n%s", tt.name, got, tt.want, df)
		}
		if !tt.want && strings.Contains(df, page) {
			t.Errorf("%s: the framework's page is still in the Dockerfile", tt.name)
		}
	}
	r := Request{PipFindLinks: []string{"https://mirror.example.com/jax/"}}
	if !r.pipMirror() || !strings.Contains(string(r.pipConf()), "find-links = https://mirror.example.com/jax/\n") {
		t.Errorf("pip.conf for --pip-find-links:\n%s", r.pipConf())
	}
	if df, err := Dockerfile(Definition{Stack: resolve(t, matrix.Constraints{JAX: cons("0.4.30")}), Base: pinned}); err != nil || strings.Contains(df, "--find-links") {
		t.Errorf("jax 0.4.30 (plugin wheels on PyPI) got --find-links (err %v)", err)
	}
}

// TestDnfExtras: dnf: packages (an RPM-based capture's) are installed
// with dnf on a Rocky Linux base, with apt:'s, and refused on an apt base
// with ErrDnfNeedsRPMBase naming them and the fix.
func TestDnfExtras(t *testing.T) {
	rocky := "docker.io/nvidia/cuda:12.2.2-runtime-rockylinux9@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	for _, tt := range []struct {
		name, os, base string
		extras         Extras
		want, err      string
	}{
		{"rocky", "rockylinux9", rocky, Extras{Apt: []string{"git"}, Dnf: []string{"NetworkManager", "jansson"}}, "dnf install -y --setopt=install_weak_deps=False NetworkManager git jansson ", ""},
		{"ubuntu", "", pinned, Extras{Dnf: []string{"jansson"}}, "", "dnf: lists RPM packages, which need an RPM base (jansson), and the stack's OS ubuntu22.04 installs with apt: set os: to rockylinux9"},
		{"bad name", "rockylinux9", rocky, Extras{Dnf: []string{"jansson; rm"}}, "", `dnf: package name "jansson; rm" is not a valid RPM package name`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			def := Definition{Stack: resolve(t, matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: cons("2.3"), OS: tt.os}), Base: tt.base, Extras: tt.extras}
			df, err := Dockerfile(def)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if tt.name == "ubuntu" && !errors.Is(err, ErrDnfNeedsRPMBase) {
					t.Errorf("err %v does not wrap ErrDnfNeedsRPMBase", err)
				}
				return
			}
			must(t, err)
			if !strings.Contains(df, tt.want) {
				t.Errorf("no %q in:\n%s", tt.want, df)
			}
		})
	}
}
