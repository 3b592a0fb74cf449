package testenv

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// CUDALibsImage makes an image of n layers, each holding Debian's real
// CUDA 11.8 libraries (libcublas, libcurand, libcudart: about 200 MB
// uncompressed, 135 MB compressed) under its own directory, staging the
// layer tars in dir. Benchmarks use it as a realistic multi-GB image with
// device code.
func CUDALibsImage(ctx context.Context, dir string, n int) (v1.Image, error) {
	libs, err := DebianCUDALibs(ctx)
	if err != nil {
		return nil, err
	}
	var layers []v1.Layer
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("layer%d.tar", i))
		if err := writeLibLayer(p, i, libs); err != nil {
			return nil, err
		}
		l, err := tarball.LayerFromFile(p)
		if err != nil {
			return nil, err
		}
		layers = append(layers, l)
	}
	return mutate.AppendLayers(empty.Image, layers...)
}

// DebianCUDALibs is DebianCUDA's libraries (DebianCUDAPackages'), by
// their full versioned names: the files, not the symlinks to them.
func DebianCUDALibs(ctx context.Context) ([]string, error) {
	root, err := DebianCUDA(ctx)
	if err != nil {
		return nil, err
	}
	libs, _ := filepath.Glob(filepath.Join(root, "usr/lib/x86_64-linux-gnu/lib*.so.*.*"))
	if len(libs) == 0 {
		return nil, fmt.Errorf("no CUDA libraries under %s", root)
	}
	return libs, nil
}

func writeLibLayer(p string, i int, libs []string) error {
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := WriteFilesTar(f, fmt.Sprintf("opt/stack%d/lib/", i), libs, time.Time{}); err != nil {
		return err
	}
	return f.Close()
}

// WriteFilesTar writes a tar of files (regular files, 0644, modified at
// mtime) to w, each named prefix + its base name.
func WriteFilesTar(w io.Writer, prefix string, files []string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, file := range files {
		st, err := os.Stat(file)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: prefix + filepath.Base(file), Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg, ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		in, err := os.Open(file)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, in)
		in.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}
