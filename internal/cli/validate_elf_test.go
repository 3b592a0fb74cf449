package cli

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestValidateUnresolvableLibrary: a hand-made image whose torch library
// needs cuSPARSELt through its RPATH, without cuSPARSELt, fails
// validation naming the file and the library.
func TestValidateUnresolvableLibrary(t *testing.T) {
	so, err := testenv.SharedObject(t.Context(), t.TempDir(), testenv.ELFSpec{
		Soname:     "libtorch_cuda.so",
		Needed:     []string{"libcusparseLt.so.0", "libcuda.so.1"},
		SearchPath: "$ORIGIN/../../cusparselt/lib:$ORIGIN/../../nvidia/cublas/lib",
	})
	if errors.Is(err, testenv.ErrNoCC) {
		t.Skipf("building the ELF fixture needs gcc: %v", err)
	}
	must(t, err)
	lib := "opt/venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so"
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must(t, tw.WriteHeader(&tar.Header{Name: lib, Mode: 0o755, Size: int64(len(so)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(so)
	must(t, err)
	must(t, tw.Close())
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	must(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	must(t, err)
	dir := filepath.Join(t.TempDir(), "layout")
	p, err := layout.Write(dir, empty.Index)
	must(t, err)
	must(t, p.AppendImage(img))

	out, errOut, code := run(t, "validate", "oci:"+dir)
	if code != 1 || !strings.Contains(out, "FAIL  libs/closure") || !strings.Contains(out, "/"+lib+" needs libcusparseLt.so.0") || strings.Contains(out, "needs libcusparseLt.so.0, libcuda.so.1") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
}
