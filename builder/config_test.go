package builder

import (
	"maps"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/buildkit/client"

	"github.com/gpuimg/gpuimg/matrix"
)

// given is a Flags.Given that says yes for keys.
func given(keys ...string) func(string) bool {
	return func(k string) bool { return slices.Contains(keys, k) }
}

// TestMergePrecedence: for every kind of setting, the command line beats
// the environment, which beats gpuimg.yaml, which beats the default; each
// merged value names its source.
func TestMergePrecedence(t *testing.T) {
	file := &Config{Path: "/src/gpuimg.yaml", Stack: matrix.Spec{matrix.FieldCUDA: "12.2", matrix.FieldFlavor: "devel", matrix.FieldTarget: "gke/cos-latest"}, Tag: []string{"r.example.com/a:file"}, Push: true,
		MatrixFile: []string{"file-rows.yaml"}, RegistryMirrors: map[string]string{"docker.io": "file-mirror.example.com"}, PythonMirror: "https://file-pbs.example.com/",
		Extras: Extras{Env: map[string]string{"A": "file", "B": "file"}, Entrypoint: []string{"python", "-m", "file"}}}
	no := false
	noCompile := &Config{TorchCompile: &no}
	tests := []struct {
		name  string
		flags Flags
		env   Env
		file  *Config
		key   string
		want  string // the merged value, rendered by get
		src   Source
	}{
		{"flag beats file", Flags{Stack: matrix.Spec{matrix.FieldCUDA: "12.4"}, Given: given("cuda")}, Env{}, file, "cuda", "12.4", FromFlag},
		{"file beats an unset flag", Flags{}, Env{}, file, "cuda", "12.2", FromFile},
		{"file beats a flag's default", Flags{Stack: matrix.Spec{matrix.FieldFlavor: "runtime"}, Given: given()}, Env{}, file, "flavor", "devel", FromFile},
		{"default without file", Flags{Stack: matrix.Spec{matrix.FieldFlavor: "runtime"}, Given: given()}, Env{}, nil, "flavor", "runtime", FromDefault},
		{"a flag set empty still wins", Flags{Stack: matrix.Spec{matrix.FieldFlavor: ""}, Given: given("flavor")}, Env{}, file, "flavor", "", FromFlag},
		{"list flag beats file", Flags{Tags: []string{"r.example.com/a:flag"}, Given: given("tag")}, Env{}, file, "tag", "r.example.com/a:flag", FromFlag},
		{"list from file", Flags{Given: given()}, Env{}, file, "tag", "r.example.com/a:file", FromFile},
		{"matrix files from file", Flags{Given: given()}, Env{}, file, "matrix_files", "file-rows.yaml", FromFile},
		{"push false on the command line beats file", Flags{Tags: []string{"r/a:1"}, Push: false, Given: given("push")}, Env{}, file, "push", "false", FromFlag},
		{"push from file", Flags{Given: given()}, Env{}, file, "push", "true", FromFile},
		{"builder flag beats BUILDKIT_HOST", Flags{Builder: "tcp://flag:1234", Given: given("builder")}, Env{BuildkitHost: "tcp://env:1234"}, file, "builder", "tcp://flag:1234", FromFlag},
		{"BUILDKIT_HOST beats the default", Flags{Given: given()}, Env{BuildkitHost: "tcp://env:1234"}, file, "builder", "tcp://env:1234", FromEnv},
		{"no builder: a local one", Flags{Given: given()}, Env{}, file, "builder", "", FromDefault},
		{"source date epoch flag beats env", Flags{SourceDateEpoch: "1700000000", Given: given("source_date_epoch")}, Env{SourceDateEpoch: "1"}, nil, "source_date_epoch", "1700000000", FromFlag},
		{"SOURCE_DATE_EPOCH", Flags{Given: given()}, Env{SourceDateEpoch: "1600000000"}, nil, "source_date_epoch", "1600000000", FromEnv},
		{"no epoch: the base image's", Flags{Given: given()}, Env{}, nil, "source_date_epoch", "<nil>", FromDefault},
		{"env pairs over file env, key by key", Flags{EnvPairs: []string{"B=flag", "C=flag"}, Given: given("env")}, Env{}, file, "env", "A=file B=flag C=flag", FromFlag},
		{"env from file", Flags{Given: given()}, Env{}, file, "env", "A=file B=file", FromFile},
		{"entrypoint as JSON", Flags{Entrypoint: `["python", "/app/app.py"]`}, Env{}, file, "entrypoint", "python /app/app.py", FromFlag},
		{"entrypoint as words", Flags{Entrypoint: "python -m app"}, Env{}, file, "entrypoint", "python -m app", FromFlag},
		{"entrypoint from file", Flags{}, Env{}, file, "entrypoint", "python -m file", FromFile},
		{"mirror flags replace file's", Flags{Mirrors: []string{"quay.io=flag-mirror"}, Given: given("registry_mirrors")}, Env{}, file, "registry_mirrors", "quay.io=flag-mirror", FromFlag},
		{"mirrors from file", Flags{Given: given()}, Env{}, file, "registry_mirrors", "index.docker.io=file-mirror.example.com", FromFile},
		{"target flag beats file", Flags{Stack: matrix.Spec{matrix.FieldTarget: "sagemaker/p5"}, Given: given("target")}, Env{}, file, "target", "sagemaker/p5", FromFlag},
		{"target from file", Flags{Given: given()}, Env{}, file, "target", "gke/cos-latest", FromFile},
		{"no target without file", Flags{Given: given()}, Env{}, nil, "target", "", FromDefault},
		{"python mirror flag beats file", Flags{PythonMirror: "http://127.0.0.1:8080/pbs", Given: given("python_mirror")}, Env{}, file, "python_mirror", "http://127.0.0.1:8080/pbs", FromFlag},
		{"python mirror from file", Flags{Given: given()}, Env{}, file, "python_mirror", "https://file-pbs.example.com/", FromFile},
		{"nil Given: a non-zero value is given", Flags{Stack: matrix.Spec{matrix.FieldCUDA: "12.4"}}, Env{}, file, "cuda", "12.4", FromFlag},
		{"nil Given: a zero value is not", Flags{}, Env{}, file, "cuda", "12.2", FromFile},
		{"torch.compile support by default", Flags{Given: given()}, Env{}, file, "torch_compile", "true", FromDefault},
		{"torch_compile: false in the file", Flags{Given: given()}, Env{}, noCompile, "torch_compile", "false", FromFile},
		{"--torch-compile=true beats the file's false", Flags{Given: given("torch_compile")}, Env{}, noCompile, "torch_compile", "true", FromFlag},
		{"--torch-compile=false", Flags{NoTorchCompile: true, Given: given("torch_compile")}, Env{}, file, "torch_compile", "false", FromFlag},
		{"nil Given: NoTorchCompile is given", Flags{NoTorchCompile: true}, Env{}, nil, "torch_compile", "false", FromFlag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Merge(tt.flags, tt.env, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := get(s, tt.key); got != tt.want {
				t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
			}
			if s.Sources[tt.key] != tt.src {
				t.Errorf("%s from %q, want %q", tt.key, s.Sources[tt.key], tt.src)
			}
		})
	}
}

// get renders one merged setting for comparison.
func get(s *Settings, key string) string {
	r := s.Request
	switch key {
	case "matrix_files":
		return strings.Join(s.MatrixFiles, " ")
	case "tag":
		return strings.Join(r.Tags, " ")
	case "push":
		if r.Push {
			return "true"
		}
		return "false"
	case "torch_compile":
		return strconv.FormatBool(!r.NoTorchCompile)
	case "builder":
		return s.Builder
	case "python_mirror":
		return r.PythonMirror
	case "source_date_epoch":
		if r.SourceDateEpoch == nil {
			return "<nil>"
		}
		return strconv.FormatInt(*r.SourceDateEpoch, 10)
	case "env":
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(r.Extras.Env)) {
			kv = append(kv, k+"="+r.Extras.Env[k])
		}
		return strings.Join(kv, " ")
	case "entrypoint":
		return strings.Join(r.Extras.Entrypoint, " ")
	case "registry_mirrors":
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(r.Mirrors)) {
			kv = append(kv, k+"="+r.Mirrors[k])
		}
		return strings.Join(kv, " ")
	}
	if f, ok := specField(key); ok {
		return s.Stack[f]
	}
	panic("no getter for " + key)
}

// TestMergeErrors: a bad value names its source and how to fix it; push
// without a tag names where push came from and every place a tag could.
func TestMergeErrors(t *testing.T) {
	file := &Config{Path: "/src/gpuimg.yaml", Push: true, RegistryMirrors: map[string]string{"docker.io": ""}}
	tests := []struct {
		name  string
		flags Flags
		env   Env
		file  *Config
		want  string
	}{
		{"bad SOURCE_DATE_EPOCH", Flags{}, Env{SourceDateEpoch: "yesterday"}, nil, `source date epoch "yesterday" (from the environment) is not a Unix time: give seconds since 1970`},
		{"bad flag epoch", Flags{SourceDateEpoch: "-5"}, Env{SourceDateEpoch: "1"}, nil, `source date epoch "-5" (from the command line) is not a Unix time`},
		{"push from file without a tag", Flags{Mirrors: []string{"docker.io=m"}}, Env{}, file, "push (set by gpuimg.yaml) needs a tag, and neither the command line nor gpuimg.yaml gives one: add -t REGISTRY/REPO:TAG, or tag: in gpuimg.yaml"},
		{"push flag without a tag", Flags{Push: true}, Env{}, nil, "push (set by the command line) needs a tag"},
		{"bad mirror in file names it", Flags{Tags: []string{"r/a:1"}}, Env{}, file, `/src/gpuimg.yaml: registry mirror "docker.io=": want REGISTRY=MIRROR`},
		{"bad mirror flag", Flags{Mirrors: []string{"docker.io"}}, Env{}, nil, `registry mirror "docker.io": want REGISTRY=MIRROR`},
		{"bad entrypoint JSON", Flags{Entrypoint: `["python"`}, Env{}, nil, `write it as a JSON array`},
		{"bad env pair", Flags{EnvPairs: []string{"1A=x"}}, Env{}, nil, `env "1A=x": want KEY=VALUE`},
		{"extras checked after the merge", Flags{Extras: Extras{Workdir: "app"}}, Env{}, nil, `workdir "app" must be an absolute path`},
		{"bad progress mode", Flags{ProgressMode: "fancy"}, Env{}, nil, `progress mode "fancy": use auto, plain, tty, rawjson or quiet`},
		{"python mirror with credentials, from file", Flags{}, Env{}, &Config{Path: "/src/gpuimg.yaml", PythonMirror: "https://u:pw@pbs.example.com/"}, `python mirror "https://u:xxxxx@pbs.example.com/" holds credentials, which would end up in the image's history: use a mirror that needs none (set by gpuimg.yaml)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(tt.flags, tt.env, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestStateDir: the flag, else $XDG_STATE_HOME, else the home directory,
// else the temporary directory.
func TestStateDir(t *testing.T) {
	for _, tt := range []struct {
		dir  string
		env  Env
		want string
	}{
		{"/flag", Env{StateHome: "/xdg", Home: "/home/u"}, "/flag"},
		{"", Env{StateHome: "/xdg", Home: "/home/u"}, "/xdg/gpuimg"},
		{"", Env{Home: "/home/u", TempDir: "/tmp"}, "/home/u/.local/state/gpuimg"},
		{"", Env{TempDir: "/tmp"}, "/tmp/gpuimg-state"},
	} {
		if got := StateDir(tt.dir, tt.env); got != tt.want {
			t.Errorf("StateDir(%q, %+v) = %q, want %q", tt.dir, tt.env, got, tt.want)
		}
	}
}

// TestGitInfo reads a real checkout's origin and HEAD, and nothing
// outside one.
func TestGitInfo(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"remote", "add", "origin", "https://example.com/ml/app.git"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if src, rev := GitInfo(t.Context(), dir); src != "https://example.com/ml/app.git" || len(rev) != 40 {
		t.Errorf("checkout: %q %q", src, rev)
	}
	if src, rev := GitInfo(t.Context(), t.TempDir()); src != "" || rev != "" {
		t.Errorf("outside a checkout: %q %q", src, rev)
	}
}

func TestCompression(t *testing.T) {
	zstd := map[string]string{"compression": "zstd", "force-compression": "true", "oci-mediatypes": "true"}
	tests := []struct {
		c    matrix.Compression
		typ  string
		want map[string]string
	}{
		{"", client.ExporterImage, zstd},
		{"", client.ExporterOCI, zstd},
		{"", client.ExporterDocker, map[string]string{}}, // docker load: BuildKit's gzip and Docker media types
		{"gzip", client.ExporterImage, map[string]string{"compression": "gzip", "force-compression": "true"}},
		{"zstd", client.ExporterImage, zstd},
		{"zstd", client.ExporterDocker, zstd}, // named: the user's choice wins
		{"estargz", client.ExporterOCI, map[string]string{"compression": "estargz", "force-compression": "true", "oci-mediatypes": "true"}},
	}
	for _, tt := range tests {
		attrs := map[string]string{}
		exporterCompression(attrs, tt.c, tt.typ)
		if !maps.Equal(attrs, tt.want) {
			t.Errorf("%q, %s: attrs %v, want %v", tt.c, tt.typ, attrs, tt.want)
		}
	}
	for _, tt := range []struct {
		name string
		t    *matrix.Target
		want matrix.Compression
	}{
		{"no target", nil, ""},
		{"takes any", &matrix.Target{Name: "any"}, ""},
		{"takes zstd", &matrix.Target{Name: "z", Compressions: []matrix.Compression{matrix.CompressionGzip, matrix.CompressionZstd}}, ""},
		{"gzip only", &matrix.Target{Name: "g", Compressions: []matrix.Compression{matrix.CompressionGzip}}, "gzip"},
		{"docker manifests only", &matrix.Target{Name: "d", MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker}}, "gzip"},
		{"docker or oci", &matrix.Target{Name: "do", MediaTypes: []matrix.ManifestFormat{matrix.FormatDocker, matrix.FormatOCI}}, ""},
	} {
		if got := CompressionFor(tt.t); got != tt.want {
			t.Errorf("CompressionFor(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
	gzipOnly := &matrix.Target{Name: "g", Compressions: []matrix.Compression{matrix.CompressionGzip}}
	for _, tt := range []struct {
		name  string
		flags Flags
		want  matrix.Compression
	}{
		{"default", Flags{}, "gzip"},
		{"named", Flags{Compression: "estargz"}, "estargz"},
	} {
		s, err := Merge(tt.flags, Env{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.ForTarget(gzipOnly); s.Request.Compression != tt.want {
			t.Errorf("ForTarget, %s compression: %q, want %q", tt.name, s.Request.Compression, tt.want)
		}
	}
	if _, err := Merge(Flags{Compression: "lz4"}, Env{}, nil); err == nil || !strings.Contains(err.Error(), `compression "lz4": use zstd, gzip or estargz (set by the command line)`) {
		t.Errorf("lz4: err = %v", err)
	}
	s, err := Merge(Flags{Compression: "gzip", Given: func(string) bool { return false }}, Env{}, &Config{Compression: "zstd"})
	if err != nil || s.Request.Compression != "zstd" || s.Sources["compression"] != FromFile {
		t.Errorf("gpuimg.yaml's compression over the flag's default: %+v, %v", s, err)
	}
}

// specField is the stack field whose Given key is key.
func specField(key string) (matrix.Field, bool) {
	for _, f := range matrix.SpecFields() {
		if f.Key() == key {
			return f, true
		}
	}
	return 0, false
}

// TestMergeStackFields: each stack field is merged on its own key, flag
// over gpuimg.yaml over the default, and records its own source.
func TestMergeStackFields(t *testing.T) {
	fromFile := matrix.Spec{matrix.FieldCUDA: "12.2", matrix.FieldCuDNN: "9", matrix.FieldTorch: "2.3", matrix.FieldTensorFlow: "2.15",
		matrix.FieldJAX: "0.4.30", matrix.FieldPython: "3.11", matrix.FieldOS: "ubuntu22.04", matrix.FieldFlavor: "devel",
		matrix.FieldGPU: "h100", matrix.FieldDriver: "535.104.05", matrix.FieldTarget: "sagemaker/p5"}
	file := &Config{Stack: fromFile}
	for _, f := range matrix.SpecFields() {
		t.Run(f.Key(), func(t *testing.T) {
			var flags matrix.Spec
			flags[f] = f.Example() + "-flag"
			s, err := Merge(Flags{Stack: flags, Given: given(f.Key())}, Env{}, file)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range matrix.SpecFields() {
				want, src := fromFile[g], FromFile
				if g == f {
					want, src = flags[f], FromFlag
				}
				if s.Stack[g] != want || s.Sources[g.Key()] != src {
					t.Errorf("%s = %q from %q, want %q from %q", g.Key(), s.Stack[g], s.Sources[g.Key()], want, src)
				}
			}
			if s, err = Merge(Flags{Given: given()}, Env{}, &Config{}); err != nil || s.Stack[f] != "" || s.Sources[f.Key()] != FromDefault {
				t.Errorf("no file: %q from %q, %v", s.Stack[f], s.Sources[f.Key()], err)
			}
		})
	}
}
