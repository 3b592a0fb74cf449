package validate

import (
	"errors"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// elfFixtures builds, once per test binary, the shared objects of a
// torch-like environment: libtorch_cuda.so with torch's RPATH list
// (PyTorch's .ci/manywheel/build_cuda.sh), cuSPARSELt 0.6's top-level
// cusparselt/lib, and cuBLAS under nvidia/.
type elfFixtures struct {
	once sync.Once
	libs map[string]string
	err  error
}

func (f *elfFixtures) get(t *testing.T) map[string]string {
	t.Helper()
	f.once.Do(func() {
		f.libs = map[string]string{}
		torchRPATH := "$ORIGIN/../../cusparselt/lib:$ORIGIN/../../nvidia/cublas/lib"
		torchNeeded := []string{"libcusparseLt.so.0", "libcublas.so.12", "libcuda.so.1"}
		for name, spec := range map[string]testenv.ELFSpec{
			"torch-rpath":   {Soname: "libtorch_cuda.so", Needed: torchNeeded, SearchPath: torchRPATH},
			"torch-runpath": {Soname: "libtorch_cuda.so", Needed: torchNeeded, SearchPath: torchRPATH, RunPath: true},
			"torch-conf":    {Soname: "libtorch_cuda.so", Needed: []string{"libfoo.so.1"}},
			"cusparselt":    {Soname: "libcusparseLt.so.0"},
			// needs a library only torch's RPATH reaches
			"cusparselt-helper": {Soname: "libcusparseLt.so.0", Needed: []string{"libhelper.so.1"}},
			// needs a library its loader has loaded already
			"cusparselt-cublas": {Soname: "libcusparseLt.so.0", Needed: []string{"libcublas.so.12"}},
			"cublas":            {Soname: "libcublas.so.12", Needed: []string{"libcublasLt.so.12"}, SearchPath: "$ORIGIN"},
			"cublaslt":          {Soname: "libcublasLt.so.12"},
			"plain":             {Soname: "libplain.so.1"},
			"cufile-rdma":       {Soname: "libcufile_rdma.so.1", Needed: []string{"libibverbs.so.1", "libmlx5.so.1", "librdmacm.so.1"}},
		} {
			b, err := testenv.SharedObject(t.Context(), t.TempDir(), spec)
			if err != nil {
				f.err = err
				return
			}
			f.libs[name] = string(b)
		}
	})
	if f.err != nil {
		if errors.Is(f.err, testenv.ErrNoCC) {
			t.Skipf("building ELF fixtures needs gcc: %v", f.err)
		}
		t.Fatal(f.err)
	}
	return f.libs
}

var closureFixtures elfFixtures

const sp = "opt/venv/lib/python3.12/site-packages/"

func withEnv(t *testing.T, img v1.Image, env ...string) v1.Image {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = env
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func closureCheck(t *testing.T, img v1.Image) *Check {
	t.Helper()
	r, err := Inspect(t.Context(), img, Options{DB: db(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Checks {
		if r.Checks[i].Name == "libs/closure" {
			if r.Verdict == matrix.Pass && r.Checks[i].Status == matrix.Fail {
				t.Errorf("verdict pass with libs/closure failing")
			}
			return &r.Checks[i]
		}
	}
	return nil
}

func TestLibsClosure(t *testing.T) {
	so := closureFixtures.get(t)
	torch := sp + "torch/lib/libtorch_cuda.so"
	cusp := sp + "cusparselt/lib/libcusparseLt.so.0"
	cublas := []file{{sp + "nvidia/cublas/lib/libcublas.so.12", so["cublas"]}, {sp + "nvidia/cublas/lib/libcublasLt.so.12", so["cublaslt"]}}
	base := func(extra ...file) v1.Layer {
		return layer(t, append(append([]file{{torch, so["torch-rpath"]}}, cublas...), extra...)...)
	}
	cuda := "usr/local/cuda-12.4/targets/x86_64-linux/lib/"
	for _, tt := range []struct {
		name   string
		img    v1.Image
		status Status
		want   []string // in the message
	}{
		{"all present", image(t, base(file{cusp, so["cusparselt"]})), matrix.Pass,
			[]string{"4 ELF objects", "all 3 of their needed libraries", "1 driver libraries"}},
		{"cuSPARSELt missing", image(t, base()), matrix.Fail,
			[]string{"1 of 3 ELF objects", "/" + torch + " needs libcusparseLt.so.0", "install what provides them"}},
		{"cuSPARSELt whited out by a later layer", image(t, base(file{cusp, so["cusparselt"]}), layer(t, file{sp + "cusparselt/lib/.wh.libcusparseLt.so.0", ""})), matrix.Fail,
			[]string{"/" + torch + " needs libcusparseLt.so.0"}},
		{"cuSPARSELt under an opaque directory", image(t, base(file{cusp, so["cusparselt"]}), layer(t, file{sp + "cusparselt/lib/.wh..wh..opq", ""})), matrix.Fail,
			[]string{"needs libcusparseLt.so.0"}},
		{"a whited-out object is not checked", image(t, base(), layer(t, file{sp + "torch/lib/.wh.libtorch_cuda.so", ""})), matrix.Pass,
			[]string{"2 ELF objects"}},
		{"soname symlink to the versioned file", image(t, base(file{cusp, "->libcusparseLt.so.0.6.3"}, file{cusp + ".6.3", so["cusparselt"]})), matrix.Pass,
			[]string{"4 ELF objects"}},
		{"dangling soname symlink", image(t, base(file{cusp, "->libcusparseLt.so.0.6.3"})), matrix.Fail,
			[]string{"needs libcusparseLt.so.0"}},
		{"top-level directory linked to a shared site directory", image(t,
			base(file{sp + "cusparselt", "->/opt/shared/site-packages/cusparselt"}),
			layer(t, file{"opt/shared/site-packages/cusparselt/lib/libcusparseLt.so.0", so["cusparselt"]})), matrix.Pass,
			[]string{"4 ELF objects"}},
		{"RUNPATH instead of RPATH", image(t, layer(t, append([]file{{torch, so["torch-runpath"]}, {cusp, so["cusparselt"]}}, cublas...)...)), matrix.Pass,
			[]string{"4 ELF objects"}},
		{"a dependency finds its library through its loader's RPATH", image(t, base(file{cusp, so["cusparselt-helper"]}, file{sp + "nvidia/cublas/lib/libhelper.so.1", so["plain"]})), matrix.Pass,
			[]string{"5 ELF objects"}},
		{"but not through its loader's RUNPATH", image(t, layer(t, append([]file{{torch, so["torch-runpath"]}, {cusp, so["cusparselt-helper"]}, {sp + "nvidia/cublas/lib/libhelper.so.1", so["plain"]}}, cublas...)...)), matrix.Fail,
			[]string{"1 of 5 ELF objects", "/" + cusp + " needs libhelper.so.1"}},
		{"a library its loader has already loaded is found by soname", image(t, layer(t, append([]file{{torch, so["torch-runpath"]}, {cusp, so["cusparselt-cublas"]}}, cublas...)...)), matrix.Pass,
			[]string{"4 ELF objects"}},
		{"but not without that loader", image(t, layer(t, append([]file{{cusp, so["cusparselt-cublas"]}}, cublas...)...)), matrix.Fail,
			[]string{"/" + cusp + " needs libcublas.so.12"}},
		{"found through /etc/ld.so.conf.d", image(t, layer(t,
			file{torch, so["torch-conf"]}, file{"usr/local/foo/lib/libfoo.so.1", so["plain"]},
			file{"etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n"}, file{"etc/ld.so.conf.d/foo.conf", "# foo\n/usr/local/foo/lib\n"})), matrix.Pass,
			[]string{"1 ELF objects"}},
		{"a conf file ld.so.conf does not include", image(t, layer(t,
			file{torch, so["torch-conf"]}, file{"usr/local/foo/lib/libfoo.so.1", so["plain"]},
			file{"etc/ld.so.conf", "/usr/lib/other\n"}, file{"etc/ld.so.conf.d/foo.conf", "/usr/local/foo/lib\n"})), matrix.Fail,
			[]string{"needs libfoo.so.1"}},
		{"found through LD_LIBRARY_PATH", withEnv(t, image(t, layer(t,
			file{torch, so["torch-conf"]}, file{"usr/local/foo/lib/libfoo.so.1", so["plain"]})), "LD_LIBRARY_PATH=/usr/local/nvidia/lib:/usr/local/foo/lib"), matrix.Pass,
			[]string{"1 ELF objects"}},
		{"found in a default directory through /lib -> usr/lib", image(t, layer(t,
			file{torch, so["torch-conf"]}, file{"lib", "->usr/lib"}, file{"usr/lib/x86_64-linux-gnu/libfoo.so.1", so["plain"]})), matrix.Pass,
			[]string{"1 ELF objects"}},
		{"cuFile's RDMA plugin without the host's RDMA stack", image(t, base(file{cusp, so["cusparselt"]}, file{sp + "nvidia/cufile/lib/libcufile_rdma.so.1", so["cufile-rdma"]})), matrix.Pass,
			[]string{"5 ELF objects", "not counted: /" + sp + "nvidia/cufile/lib/libcufile_rdma.so.1 needs libibverbs.so.1, libmlx5.so.1, librdmacm.so.1"}},
		{"another library without the RDMA stack fails", image(t, base(file{cusp, so["cusparselt"]}, file{sp + "nvidia/other/lib/libother.so.1", so["cufile-rdma"]})), matrix.Fail,
			[]string{"/" + sp + "nvidia/other/lib/libother.so.1 needs libibverbs.so.1, libmlx5.so.1, librdmacm.so.1"}},
		{"CUDA's library directory", image(t, layer(t, file{cuda + "libcublas.so.12", so["cublas"]})), matrix.Fail,
			[]string{"/" + cuda + "libcublas.so.12 needs libcublasLt.so.12"}},
		{"CUDA's link stubs are not checked", image(t, layer(t, file{cuda + "stubs/libcublas.so", so["cublas"]})), "", nil},
		{"files outside the environment are not checked", image(t, layer(t, file{"usr/lib/libtorch_cuda.so", so["torch-rpath"]})), "", nil},
		{"an unreadable object warns", image(t, layer(t, file{sp + "torch/lib/libbroken.so", so["torch-rpath"][:200]})), matrix.Warn,
			[]string{"1 could not be read", "/" + sp + "torch/lib/libbroken.so"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := closureCheck(t, tt.img)
			if tt.status == "" {
				if c != nil {
					t.Fatalf("want no libs/closure check, got %+v", c)
				}
				return
			}
			if c == nil {
				t.Fatal("no libs/closure check")
			}
			if c.Status != tt.status {
				t.Errorf("status %s, want %s: %s", c.Status, tt.status, c.Message)
			}
			for _, w := range tt.want {
				if !strings.Contains(c.Message, w) {
					t.Errorf("message lacks %q: %s", w, c.Message)
				}
			}
		})
	}
}

func TestLibsClosureLimit(t *testing.T) {
	so := closureFixtures.get(t)
	img := image(t, layer(t, file{sp + "a/liba.so", so["plain"]}, file{sp + "b/libb.so", so["plain"]}, file{sp + "c/libc.so", so["plain"]}))
	r, err := Inspect(t.Context(), img, Options{DB: db(t), Limits: Limits{MaxELFObjects: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Checks {
		if c.Name == "libs/closure" {
			if c.Status != matrix.Warn || !strings.Contains(c.Message, "1 more were not read") {
				t.Errorf("%s: %s", c.Status, c.Message)
			}
			return
		}
	}
	t.Error("no libs/closure check")
}

func TestRealPath(t *testing.T) {
	c := &closure{links: map[string]string{
		"lib":                   "usr/lib",
		"usr/local/cuda":        "/etc/alternatives/cuda",
		"etc/alternatives/cuda": "/usr/local/cuda-12.4",
		"loop/a":                "b",
		"loop/b":                "a",
		"up":                    "../../../../x",
	}}
	for in, want := range map[string]string{
		"lib/x86_64-linux-gnu/libc.so.6":       "usr/lib/x86_64-linux-gnu/libc.so.6",
		"usr/local/cuda/lib64/libcudart.so.12": "usr/local/cuda-12.4/lib64/libcudart.so.12",
		"up/y":                                 "x/y",
		"loop/a":                               "",
	} {
		got, ok := c.realPath(in)
		if want == "" {
			if ok {
				t.Errorf("%s: %q, want ELOOP", in, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}

func TestLdConfDirs(t *testing.T) {
	got := ldConfDirs(map[string]string{
		"etc/ld.so.conf":                    "include ld.so.conf.d/*.conf\n/opt/extra # trailing\n",
		"etc/ld.so.conf.d/a.conf":           "/usr/local/cuda/lib64\n/usr/local/nvidia/lib:/usr/local/nvidia/lib64\n",
		"etc/ld.so.conf.d/b.conf":           "include /etc/ld.so.conf\nhwcap 1 nosegneg\n/usr/lib/x=libc6\n",
		"etc/ld.so.conf.d/ignored.disabled": "/nope\n",
	})
	want := []string{"usr/local/cuda/lib64", "usr/local/nvidia/lib", "usr/local/nvidia/lib64", "usr/lib/x", "opt/extra"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q, want %q", got, want)
	}
}
