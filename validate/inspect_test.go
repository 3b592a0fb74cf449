package validate

import (
	"archive/tar"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

func db(t testing.TB) *matrix.DB {
	t.Helper()
	d, err := matrix.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// torchImage is a small image laid out like a gpuimg build of CUDA 12.2 +
// torch 2.3.1, with torch's variant and the label chosen by the caller.
func torchImage(t testing.TB, torchCUDA, requireCUDA string, label *matrix.Stack, extra ...file) v1.Image {
	t.Helper()
	tag := "cu" + strings.ReplaceAll(torchCUDA, ".", "")
	sp := "opt/venv/lib/python3.10/site-packages/"
	files := []file{
		{"etc/os-release", "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nID=ubuntu\nVERSION_ID=\"22.04\"\n"},
		{"usr/local/cuda-12.2/version.json", `{"cuda":{"name":"CUDA SDK","version":"12.2.2"}}`},
		{"usr/bin/python3.10", "ELF"},
		{"opt/venv/pyvenv.cfg", "home = /usr/bin\nversion = 3.10.12\n"},
		{sp, ""},
		{sp + "torch/version.py", "__version__ = '2.3.1+" + tag + "'\ncuda: Optional[str] = '" + torchCUDA + "'\n"},
		{sp + "torch-2.3.1+" + tag + ".dist-info/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.3.1+" + tag + "\n\nbody"},
		{sp + "nvidia_cudnn_cu12-8.9.2.26.dist-info/METADATA", "Name: nvidia-cudnn-cu12\nVersion: 8.9.2.26\n"},
	}
	img := image(t, layer(t, files...), layer(t, extra...))
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = []string{"PATH=/opt/venv/bin:/usr/bin", "NVIDIA_REQUIRE_CUDA=" + requireCUDA}
	if label != nil {
		b, _ := json.Marshal(label)
		cfg.Config.Labels = map[string]string{"dev.gpuimg.stack": string(b)}
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func stack(t testing.TB) matrix.Stack {
	tc := matrix.MustConstraint("2.3")
	s, err := db(t).Resolve(matrix.Constraints{CUDA: matrix.MustConstraint("12.2"), Torch: &tc})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func statuses(r *Report) map[string]Status {
	m := map[string]Status{}
	for _, c := range r.Checks {
		m[c.Name] = c.Status
	}
	return m
}

func TestInspectChecks(t *testing.T) {
	good := stack(t)
	tests := []struct {
		name    string
		img     v1.Image
		opt     Options
		want    map[string]Status
		verdict Status
		msgHas  string
	}{
		{
			name:    "what the label says",
			img:     torchImage(t, "12.1", "cuda>=12.2", &good),
			want:    map[string]Status{"stack-label": matrix.Pass, "torch-cuda": matrix.Pass, "python": matrix.Pass, "cudnn": matrix.Pass, "require-cuda": matrix.Pass, "secrets": matrix.Pass, "size": matrix.Pass},
			verdict: matrix.Pass,
			msgHas:  "minor-version compatibility",
		},
		{
			name:    "wrong torch variant behind a correct label",
			img:     torchImage(t, "11.8", "cuda>=12.2", &good),
			want:    map[string]Status{"stack-label": matrix.Fail, "torch-cuda": matrix.Fail},
			verdict: matrix.Fail,
			msgHas:  "torch built for CUDA \"11.8\", the label says 12.1",
		},
		{
			name:    "NVIDIA_REQUIRE_CUDA weaker than the toolkit",
			img:     torchImage(t, "12.1", "cuda>=12.0", nil),
			want:    map[string]Status{"require-cuda": matrix.Fail},
			verdict: matrix.Fail,
			msgHas:  "weaker than what is inside: it lets drivers that report CUDA 12.0 start the image, and CUDA 12.2 needs driver >= 535.104.05",
		},
		{
			// 535.54.03 is CUDA 12.2.0's driver and reports CUDA 12.2
			// (cuda.yaml, CUDA release notes' driver table): below 12.2.2's
			// floor, but the runtime's cuda>=12.2 holds.
			name:    "driver meets only the compatibility floor",
			img:     torchImage(t, "12.1", "cuda>=12.2", &good),
			opt:     Options{Driver: matrix.MustVersion("535.54.03")},
			want:    map[string]Status{"driver": matrix.Warn, "driver/require-cuda": matrix.Pass},
			verdict: matrix.Pass,
			msgHas:  "driver 535.54.03 reports CUDA 12.2",
		},
		{
			// 530.30.02 reports CUDA 12.1: the NVIDIA container runtime
			// refuses a cuda>=12.2 image on it, whatever the floors say.
			name:    "the runtime refuses a driver that reports an older CUDA",
			img:     torchImage(t, "12.1", "cuda>=12.2", &good),
			opt:     Options{Driver: matrix.MustVersion("530.30.02")},
			want:    map[string]Status{"driver": matrix.Warn, "driver/require-cuda": matrix.Fail},
			verdict: matrix.Fail,
			msgHas:  "driver 530.30.02 reports CUDA 12.1",
		},
		{
			name:    "driver too old",
			img:     torchImage(t, "12.1", "cuda>=12.2", &good),
			opt:     Options{Driver: matrix.MustVersion("470.57.02")},
			want:    map[string]Status{"driver": matrix.Fail},
			verdict: matrix.Fail,
		},
		{
			name: "secrets in files, environment, history",
			img: func() v1.Image {
				img := torchImage(t, "12.1", "cuda>=12.2", nil, file{"root/.netrc", "machine pypi.example.com login ci password hunter2\n"}, file{"app/key.pem", "-----BEGIN RSA PRIVATE KEY-----\nMII\n"})
				cfg, _ := img.ConfigFile()
				cfg = cfg.DeepCopy()
				cfg.Config.Env = append(cfg.Config.Env, "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH")
				cfg.History = []v1.History{{CreatedBy: "RUN pip install --index-url https://ci:s3cret@pypi.example.com/simple torch"}}
				img, _ = mutate.ConfigFile(img, cfg)
				return img
			}(),
			want:    map[string]Status{"secrets": matrix.Fail},
			verdict: matrix.Fail,
			msgHas:  "a private key (-----BEGIN RSA PRIVATE KEY-----…) in /app/key.pem (layer 1, sha256:f2216a7b4328); a password (… 7 chars) in /root/.netrc (layer 1, sha256:f2216a7b4328); a Hugging Face token (hf_… 37 chars) in the environment variable HF_TOKEN; a URL with a password (https://…:…@pypi.example.com) in the image history, step 0 (RUN pip install --index-url [https://…:…@pypi.example.com]/simple torch)",
		},
	}
	tests = append(tests, struct {
		name    string
		img     v1.Image
		opt     Options
		want    map[string]Status
		verdict Status
		msgHas  string
	}{
		name: "another OS under the label's name is a warning",
		img: func() v1.Image {
			s := good
			s.OS = "ubuntu20.04"
			return torchImage(t, "12.1", "cuda>=12.2", &s)
		}(),
		want:    map[string]Status{"stack-label/os": matrix.Warn, "stack-label": matrix.Pass},
		verdict: matrix.Pass,
		msgHas:  "the files say ubuntu22.04 (Ubuntu 22.04.4 LTS), the label says ubuntu20.04",
	}, struct {
		name    string
		img     v1.Image
		opt     Options
		want    map[string]Status
		verdict Status
		msgHas  string
	}{
		// images.yaml: 12.2.0 is in NVIDIA's doc/unsupported-tags.md
		// (eol: true); 12.2.2 is the supported 12.2 point release.
		name: "built FROM a tag NVIDIA marked end of life is a warning",
		img: func() v1.Image {
			s := good
			s.CUDA, s.BaseImage = "12.2.0", "nvidia/cuda:12.2.0-base-ubuntu22.04"
			return torchImage(t, "12.1", "cuda>=12.2", &s)
		}(),
		want:    map[string]Status{"base-image": matrix.Warn, "stack-label": matrix.Pass},
		verdict: matrix.Pass,
		msgHas:  "built FROM nvidia/cuda:12.2.0-base-ubuntu22.04, which NVIDIA has marked end of life: it gets no security updates and NVIDIA deletes such tags six months later; rebuild on 12.2.2",
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opt := tt.opt
			opt.DB = db(t)
			r, err := Inspect(t.Context(), tt.img, opt)
			if err != nil {
				t.Fatal(err)
			}
			got := statuses(r)
			for name, st := range tt.want {
				if got[name] != st {
					t.Errorf("check %s = %q, want %q; checks: %+v", name, got[name], st, r.Checks)
				}
			}
			if r.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s", r.Verdict, tt.verdict)
			}
			var all strings.Builder
			for _, c := range r.Checks {
				all.WriteString(c.Message + "\n")
			}
			if tt.msgHas != "" && !strings.Contains(all.String(), tt.msgHas) {
				t.Errorf("no message contains %q:\n%s", tt.msgHas, all.String())
			}
			if r.Found.CUDA != "12.2.2" || r.Found.Python != "3.10" || r.Found.OS != "ubuntu22.04" || r.Found.CuDNN != "8.9.2.26" || r.Found.Packages["torch"] == "" {
				t.Errorf("found = %+v", r.Found)
			}
		})
	}
}

func TestReportRenderings(t *testing.T) {
	good := stack(t)
	r, err := Inspect(t.Context(), torchImage(t, "11.8", "cuda>=12.2", &good), Options{DB: db(t), Name: "example/torch:bad", Digest: "sha256:abc", Bandwidth: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	var js strings.Builder
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js.String()), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"image", "digest", "found", "checks", "verdict"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, k := range []string{"os", "cuda", "cudnn", "nccl", "python", "packages", "kernels"} {
		if _, ok := m["found"].(map[string]any)[k]; !ok && k != "nccl" {
			t.Errorf("found lacks %q", k)
		}
	}
	var ju strings.Builder
	if err := r.WriteJUnit(&ju); err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(ju.String()), &suites); err != nil {
		t.Fatalf("junit: %v\n%s", err, ju.String())
	}
	if len(suites.Suites) != 1 || suites.Suites[0].Failures < 2 || suites.Suites[0].Tests != len(r.Checks) {
		t.Errorf("junit suites = %+v", suites)
	}
	var txt strings.Builder
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verdict: fail", "FAIL  stack-label", "torch", "to pull at 1 Gbit/s"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}

// TestInspectDebianCUDALibraries validates an image holding NVIDIA's real
// CUDA 11.8 libraries as Debian packages them, plus a pip-wheel copy of
// cuBLAS (the duplicate a careless Dockerfile makes).
func TestInspectDebianCUDALibraries(t *testing.T) {
	testenv.Require(t, "needs Debian's CUDA packages", testenv.Slow)
	root, err := testenv.DebianCUDA(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, "usr/lib/x86_64-linux-gnu")
	tarPath := filepath.Join(t.TempDir(), "cuda.tar")
	f, err := os.Create(tarPath)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	add := func(name, src string) {
		st, err := os.Lstat(src)
		if err != nil {
			t.Fatal(err)
		}
		h := &tar.Header{Name: name, Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg}
		if st.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(src)
			h = &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}
		}
		must(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			in, err := os.Open(src)
			must(t, err)
			_, err = io.Copy(tw, in)
			in.Close()
			must(t, err)
		}
	}
	must(t, tw.WriteHeader(&tar.Header{Name: "etc/os-release", Mode: 0o644, Size: 48, Typeflag: tar.TypeReg}))
	_, _ = tw.Write([]byte("ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian12\"\n")[:48])
	entries, _ := os.ReadDir(lib)
	for _, e := range entries {
		add("usr/lib/x86_64-linux-gnu/"+e.Name(), filepath.Join(lib, e.Name()))
	}
	add("opt/venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.11", filepath.Join(lib, "libcublas.so.11.11.3.6"))
	must(t, tw.Close())
	must(t, f.Close())
	l, err := tarball.LayerFromFile(tarPath)
	must(t, err)
	img := image(t, l)

	r, err := Inspect(t.Context(), img, Options{DB: db(t), GPU: "h100", Driver: matrix.MustVersion("470.57.02")})
	must(t, err)
	if r.Found.CUDA != "11.8.89" || r.Found.CuBLAS != "11.11.3.6" || r.Found.OS != "debian12" {
		t.Errorf("found CUDA %q cuBLAS %q OS %q", r.Found.CUDA, r.Found.CuBLAS, r.Found.OS)
	}
	k, ok := r.Found.Kernels["usr/lib/x86_64-linux-gnu/libcurand.so.10.3.0.86"]
	if !ok || strings.Join(k.SASS, " ") != "sm_35 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_89 sm_90" || strings.Join(k.PTX, " ") != "sm_90" {
		t.Errorf("libcurand kernels = %+v", k)
	}
	st := statuses(r)
	want := map[string]Status{"gpu": matrix.Pass, "driver": matrix.Warn, "duplicate-libs": matrix.Warn, "require-cuda": matrix.Warn}
	for n, s := range want {
		if st[n] != s {
			t.Errorf("check %s = %s, want %s: %+v", n, st[n], s, r.Checks)
		}
	}
	// Blackwell is newer than CUDA 11.8 can target.
	r, err = Inspect(t.Context(), img, Options{DB: db(t), GPU: "b200"})
	must(t, err)
	if st := statuses(r); st["gpu/cuda"] != matrix.Fail || st["gpu"] != matrix.Warn {
		t.Errorf("b200: %+v", r.Checks)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestInspectDriverLibsBakedIn puts NVIDIA's real driver library (Debian's
// libnvidia-ml1, 535.261.03, laid out as the package installs it) into an
// image: the driver-libs check fails and names it, while CUDA's
// forward-compatibility libcuda and the link stubs are not counted, and a
// later layer that deletes the library clears the finding.
func TestInspectDriverLibsBakedIn(t *testing.T) {
	testenv.Require(t, "downloads Debian's libnvidia-ml1", testenv.Slow)
	lib, err := testenv.DebianNVML(t.Context())
	must(t, err)
	real, err := filepath.EvalSymlinks(lib)
	must(t, err)
	b, err := os.ReadFile(real)
	must(t, err)
	dir := "usr/lib/x86_64-linux-gnu/nvidia/current/"
	driver := layer(t,
		file{dir + filepath.Base(real), string(b)},
		file{dir + "libnvidia-ml.so.1", "->" + filepath.Base(real)},
		file{"usr/local/cuda-12.2/compat/libcuda.so.535.104.05", "ELF compat"},
		file{"usr/local/cuda-12.2/targets/x86_64-linux/lib/stubs/libcuda.so", "ELF stub"},
	)
	base := torchImage(t, "12.1", "cuda>=12.2", nil)
	img, err := mutate.AppendLayers(base, driver)
	must(t, err)
	r, err := Inspect(t.Context(), img, Options{DB: db(t)})
	must(t, err)
	var msg string
	for _, c := range r.Checks {
		if c.Name == "driver-libs" {
			if c.Status != matrix.Fail {
				t.Errorf("driver-libs %s", c.Status)
			}
			msg = c.Message
		}
	}
	if !strings.Contains(msg, "535.261.03") || !strings.Contains(msg, "/"+dir+filepath.Base(real)) || strings.Contains(msg, "cuda-12.2/compat/libcuda") || strings.Contains(msg, "stubs") {
		t.Errorf("driver-libs message %q", msg)
	}
	if len(r.Found.DriverLibs) != 1 || r.Found.DriverLibs[0].Family != "nvidia-ml" {
		t.Errorf("found %+v", r.Found.DriverLibs)
	}

	// Removed again in a later layer: nothing ships.
	img, err = mutate.AppendLayers(img, layer(t, file{dir + ".wh." + filepath.Base(real), ""}))
	must(t, err)
	r, err = Inspect(t.Context(), img, Options{DB: db(t)})
	must(t, err)
	if st := statuses(r); st["driver-libs"] != "" {
		t.Errorf("after the whiteout: driver-libs %s %+v", st["driver-libs"], r.Found.DriverLibs)
	}
	// The plain test image has none.
	r, err = Inspect(t.Context(), base, Options{DB: db(t)})
	must(t, err)
	if st := statuses(r); st["driver-libs"] != "" {
		t.Errorf("base: driver-libs %s", st["driver-libs"])
	}
}

// TestReportAdd: checks added after the walk count for the verdict.
func TestReportAdd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start []Check
		add   []Check
		want  matrix.Status
	}{
		{"nothing added", []Check{{Name: "a", Status: matrix.Pass}}, nil, matrix.Pass},
		{"a warning stays a pass", []Check{{Name: "a", Status: matrix.Pass}}, []Check{{Name: "b", Status: matrix.Warn}}, matrix.Pass},
		{"an added failure fails", []Check{{Name: "a", Status: matrix.Pass}}, []Check{{Name: "b", Status: matrix.Fail}}, matrix.Fail},
		{"an earlier failure stays", []Check{{Name: "a", Status: matrix.Fail}}, []Check{{Name: "b", Status: matrix.Pass}}, matrix.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Checks: tc.start, Verdict: matrix.Verdict(tc.start)}
			r.Add(tc.add...)
			if r.Verdict != tc.want || len(r.Checks) != len(tc.start)+len(tc.add) {
				t.Errorf("verdict %s with %d checks, want %s with %d", r.Verdict, len(r.Checks), tc.want, len(tc.start)+len(tc.add))
			}
		})
	}
}
