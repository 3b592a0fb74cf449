// Command compression measures what each layer compression BuildKit can
// write costs at build time and saves at pull time, on real CUDA code: a
// tar of Debian 13's libtorch_cuda.so.2.6.0 (PyTorch's CUDA library, the
// bulk of a torch CUDA wheel) and one of Debian 12's CUDA 11.8 cuBLAS,
// cuRAND and cudart (what the nvidia-* wheels hold). Each codec runs with
// the library and options BuildKit v0.33 uses (compress/gzip at level 6;
// klauspost zstd with its default concurrency, at the encoder level
// BuildKit's compression-level maps to), and is read back as containerd
// does without unpigz (compress/gzip, klauspost zstd).
//
// For each codec and tar it prints the size, the compression time (the
// builder's cost, on every build that changes the layer) and the
// decompression time, and the time to fetch and decompress the layer at
// 100 Mbit/s and 1 Gbit/s: containerd fetches a layer whole and then
// unpacks it, so the two add up. The last line compares them with gzip.
//
// Run it with `make bench-compression` (root, Debian 12: the libraries
// come from Debian's archive, cached by internal/testenv).
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// codec is one compression as BuildKit writes it.
type codec struct {
	name  string
	write func(io.Writer) (io.WriteCloser, error)
	read  func(io.Reader) (io.ReadCloser, error)
}

func zstdCodec(level int) codec {
	name := fmt.Sprintf("zstd-%d", level)
	var opts []zstd.EOption
	if level < 0 {
		name = "zstd" // BuildKit's default: no compression-level
	} else {
		opts = append(opts, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
	}
	return codec{name: name,
		write: func(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w, opts...) },
		read: func(r io.Reader) (io.ReadCloser, error) {
			d, err := zstd.NewReader(r)
			if err != nil {
				return nil, err
			}
			return d.IOReadCloser(), nil
		}}
}

var codecs = []codec{
	{name: "gzip",
		write: func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriterLevel(w, gzip.DefaultCompression) },
		read:  func(r io.Reader) (io.ReadCloser, error) { return gzip.NewReader(r) }},
	zstdCodec(1),  // zstd.SpeedFastest
	zstdCodec(-1), // zstd.SpeedDefault, gpuimg's default (no level set)
	zstdCodec(7),  // zstd.SpeedBetterCompression
	zstdCodec(11), // zstd.SpeedBestCompression
}

func main() {
	runs := flag.Int("runs", 3, "compress and decompress each tar this many times; the median time counts")
	keep := flag.String("dir", "", "write the tars here (default: a temporary directory, removed after)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *runs, *keep)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// input is a tar of real files the benchmark compresses.
type input struct {
	name, path string
	size       int64
	digest     []byte // sha256 of the tar, to check each codec's round trip
}

// result is one codec on one input.
type result struct {
	size                 int64
	compress, decompress time.Duration
}

func run(ctx context.Context, runs int, dir string) error {
	if runs < 1 {
		return errors.New("-runs must be at least 1")
	}
	torch, err := testenv.DebianTorchCUDA(ctx)
	if err != nil {
		return err
	}
	cudaLibs, err := testenv.DebianCUDALibs(ctx)
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "gpuimg-bench-compression-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	inputs := []input{
		{name: "libtorch_cuda.so (Debian 13, CUDA 12.4)", path: filepath.Join(dir, "torch.tar")},
		{name: "cuBLAS, cuRAND, cudart (Debian 12, CUDA 11.8)", path: filepath.Join(dir, "cuda.tar")},
	}
	files := [][]string{{filepath.Join(torch, testenv.DebianTorchCUDALib)}, cudaLibs}
	for i := range inputs {
		if inputs[i].size, inputs[i].digest, err = writeTar(inputs[i].path, files[i]); err != nil {
			return err
		}
	}

	fmt.Printf("%d CPUs; median of %d runs; fetch at 100 Mbit/s and 1 Gbit/s, then decompress (containerd unpacks a layer once it is fetched)\n", runtime.NumCPU(), runs)
	all := make([][]result, len(inputs))
	for i, in := range inputs {
		fmt.Printf("\n%s: %.1f MB uncompressed\n\n", in.name, mb(in.size))
		fmt.Println("| codec | size | ratio | compress | decompress | 100 Mbit/s | 1 Gbit/s |")
		fmt.Println("| --- | --: | --: | --: | --: | --: | --: |")
		for _, c := range codecs {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := measure(in, c, runs)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", c.name, in.name, err)
			}
			all[i] = append(all[i], r)
			fmt.Printf("| %s | %.1f MB | %.3f | %.1f s | %.2f s | %.1f s | %.2f s |\n", c.name, mb(r.size), float64(r.size)/float64(in.size),
				r.compress.Seconds(), r.decompress.Seconds(), pull(r, 100e6).Seconds(), pull(r, 1e9).Seconds())
		}
	}

	// The last line: each codec against gzip, both inputs together.
	var parts []string
	sum := func(c int) (r result) {
		for i := range inputs {
			r.size += all[i][c].size
			r.compress += all[i][c].compress
			r.decompress += all[i][c].decompress
		}
		return r
	}
	gz := sum(0)
	for c := 1; c < len(codecs); c++ {
		r := sum(c)
		parts = append(parts, fmt.Sprintf("%s size %.2f, compress %.2f, pull %.2f/%.2f",
			codecs[c].name, ratio(r.size, gz.size), ratio(r.compress, gz.compress),
			ratio(pull(r, 100e6), pull(gz, 100e6)), ratio(pull(r, 1e9), pull(gz, 1e9))))
	}
	fmt.Printf("\ncompression: %s (codec/gzip; pull at 100 Mbit/s / 1 Gbit/s; lower is better)\n", strings.Join(parts, "; "))
	return nil
}

// pull is the time to fetch r's bytes at bits per second, then decompress.
func pull(r result, bits float64) time.Duration {
	return time.Duration(float64(r.size)*8/bits*float64(time.Second)) + r.decompress
}

func ratio[T int64 | time.Duration](a, b T) float64 { return float64(a) / float64(b) }

func mb(n int64) float64 { return float64(n) / 1e6 }

// writeTar writes the files as an uncompressed tar at path (by their
// base names under usr/lib/x86_64-linux-gnu/, testenv.WriteFilesTar) and
// returns its size and sha256.
func writeTar(path string, files []string) (int64, []byte, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, nil, err
	}
	h := sha256.New()
	if err := testenv.WriteFilesTar(io.MultiWriter(f, h), "usr/lib/x86_64-linux-gnu/", files, time.Unix(0, 0)); err != nil {
		f.Close()
		return 0, nil, err
	}
	if err := f.Close(); err != nil {
		return 0, nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, nil, err
	}
	return st.Size(), h.Sum(nil), nil
}

// measure compresses in's tar with c runs times into memory, and
// decompresses the result runs times, checking it reads back whole.
func measure(in input, c codec, runs int) (result, error) {
	var comp, decomp []time.Duration
	var out bytes.Buffer
	for range runs {
		src, err := os.Open(in.path)
		if err != nil {
			return result{}, err
		}
		out.Reset()
		start := time.Now()
		w, err := c.write(&out)
		if err == nil {
			_, err = io.Copy(w, src)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		comp = append(comp, time.Since(start))
		src.Close()
		if err != nil {
			return result{}, err
		}
	}
	for i := range runs + 1 {
		// The last pass checks the bytes and is not timed.
		r, err := c.read(bytes.NewReader(out.Bytes()))
		if err != nil {
			return result{}, err
		}
		dst := io.Discard
		h := sha256.New()
		if i == runs {
			dst = h
		}
		start := time.Now()
		_, err = io.Copy(dst, r)
		elapsed := time.Since(start)
		r.Close()
		if err != nil {
			return result{}, err
		}
		if i < runs {
			decomp = append(decomp, elapsed)
		} else if !bytes.Equal(h.Sum(nil), in.digest) {
			return result{}, errors.New("decompressed bytes differ from the tar")
		}
	}
	return result{size: int64(out.Len()), compress: median(comp), decompress: median(decomp)}, nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
