// Command validate compares `gpuimg validate` with `skopeo copy` of the
// same image to a local directory, in the same run: reading every byte of
// every layer once is the floor for validation, and skopeo's copy is that
// floor done by an independent tool. It reports wall time and peak memory
// (max RSS) of each, and their ratios. It also times `gpuimg sbom` on the
// same image, which validates and collects the SBOM's inventory in the
// same pass: its cost over validate alone is the SBOM's (issue 26 wants
// it under 10%), and `gpuimg sbom --attach --key` (validate + SBOM +
// signing: the SBOM pushed as a referrer and as a signed attestation, as
// publish's signing: does), to show signing adds no second read; and
// `gpuimg validate --attach --key --sbom` (the report attached, signed as
// a test result, with the SBOM of the same walk beside it, as publish
// attaches its validation).
//
// The image is several layers of NVIDIA's real CUDA 11.8 libraries from
// Debian (device code included, so the fatbin scanner works for real),
// pushed to a local distribution registry.
//
// With -baseline OLD it times only validate, this binary's against OLD's
// (a gpuimg built from an earlier commit) on the same image, alternating,
// with wall and CPU time: how the secrets scan's cost was held to 10%.
//
// Run it with `make bench-validate` (root, Debian 12).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

func main() {
	layers := flag.Int("layers", 8, "layers of CUDA libraries (about 200 MB each uncompressed)")
	runs := flag.Int("runs", 3, "runs of each tool")
	gpuimg := flag.String("gpuimg", "bin/gpuimg", "gpuimg binary")
	baseline := flag.String("baseline", "", "a gpuimg binary built from an earlier commit: time only validate, this binary's against the baseline's, alternating, on the same image")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *layers, *runs, *gpuimg, *baseline)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type sample struct {
	wall   time.Duration
	cpu    time.Duration // user + system, the command's and its children's
	maxRSS int64         // KiB
}

// measure runs the command through testenv.Measure: this process has
// read a gigabyte of layers by now, and a child's rusage read here directly
// would carry this process's peak (see internal/testenv/peakrss).
func measure(ctx context.Context, dir, name string, args ...string) (sample, error) {
	cmd, err := testenv.Measure(ctx, dir, name, args...)
	if err != nil {
		return sample{}, err
	}
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 { // validate exits 1 on failed checks
			return sample{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	wall := time.Since(start)
	rss, err := cmd.MaxRSS()
	if err != nil {
		return sample{}, err
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime() // wait4 counts the waited children
	return sample{wall: wall, cpu: cpu, maxRSS: rss >> 10}, nil
}

func run(ctx context.Context, nLayers, runs int, gpuimg, baseline string) (err error) {
	if err := testenv.EnsurePackages(ctx, "skopeo"); err != nil {
		return err
	}
	tools, err := testenv.BuildTools(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("/tmp", "gv-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	reg, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, "registry"))
	if err != nil {
		return err
	}
	defer reg.Stop()

	img, err := testenv.CUDALibsImage(ctx, dir, nLayers)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	ref := reg.Host + "/bench/cuda-libs:latest"
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "pushing a %d-layer image of CUDA libraries to %s …\n", nLayers, ref)
	if err := remote.Write(r, img, remote.WithContext(ctx)); err != nil {
		return err
	}
	var compressed, uncompressed int64
	for _, l := range layers {
		s, _ := l.Size()
		compressed += s
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, rc)
		rc.Close()
		uncompressed += n
	}

	fmt.Printf("image: %d layers, %.0f MB compressed, %.0f MB uncompressed\n", nLayers, float64(compressed)/1e6, float64(uncompressed)/1e6)
	if baseline != "" {
		return versus(ctx, dir, ref, runs, gpuimg, baseline)
	}
	key, err := writeKey(dir)
	if err != nil {
		return err
	}
	var skopeo, validate, sbom, signed, attached []sample
	for range runs {
		out := filepath.Join(dir, "copy")
		os.RemoveAll(out)
		s, err := measure(ctx, dir, "skopeo", "copy", "--src-tls-verify=false", "docker://"+ref, "dir:"+out)
		if err != nil {
			return err
		}
		skopeo = append(skopeo, s)
		os.RemoveAll(out)
		v, err := measure(ctx, dir, gpuimg, "validate", ref, "--gpu", "h100", "-o", "json")
		if err != nil {
			return err
		}
		validate = append(validate, v)
		b, err := measure(ctx, dir, gpuimg, "sbom", ref, "--file", filepath.Join(dir, "sbom.spdx.json"))
		if err != nil {
			return err
		}
		sbom = append(sbom, b)
		g, err := measure(ctx, dir, gpuimg, "sbom", ref, "--file", filepath.Join(dir, "sbom.spdx.json"), "--attach", "--key", key)
		if err != nil {
			return err
		}
		signed = append(signed, g)
		a, err := measure(ctx, dir, gpuimg, "validate", ref, "--gpu", "h100", "-o", "json", "--attach", "--key", key, "--sbom", "spdx-json")
		if err != nil {
			return err
		}
		attached = append(attached, a)
	}
	med := median
	sk, va, sb, sg, at := med(skopeo), med(validate), med(sbom), med(signed), med(attached)
	fmt.Printf("%d runs each (median wall, max RSS)\n", runs)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "skopeo copy docker:// dir:", sk.wall.Seconds(), float64(sk.maxRSS)/1024)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "gpuimg validate --gpu h100", va.wall.Seconds(), float64(va.maxRSS)/1024)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "gpuimg sbom (validate + SBOM)", sb.wall.Seconds(), float64(sb.maxRSS)/1024)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "gpuimg sbom --attach --key (+sign)", sg.wall.Seconds(), float64(sg.maxRSS)/1024)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "gpuimg validate --attach --key --sbom", at.wall.Seconds(), float64(at.maxRSS)/1024)
	fmt.Printf("ratio validate/skopeo: time %.2fx, memory %.2fx\n", va.wall.Seconds()/sk.wall.Seconds(), float64(va.maxRSS)/float64(sk.maxRSS))
	fmt.Printf("ratio sbom/validate: time %.2fx (issue 26: under 1.10x), memory %.2fx\n", sb.wall.Seconds()/va.wall.Seconds(), float64(sb.maxRSS)/float64(va.maxRSS))
	fmt.Printf("ratio sbom+sign/validate: time %.2fx (issue 26: under 1.10x), memory %.2fx\n", sg.wall.Seconds()/va.wall.Seconds(), float64(sg.maxRSS)/float64(va.maxRSS))
	fmt.Printf("ratio validate --attach --key --sbom/validate: time %.2fx (issue 26: under 1.10x), memory %.2fx\n", at.wall.Seconds()/va.wall.Seconds(), float64(at.maxRSS)/float64(va.maxRSS))
	return nil
}

// versus times `validate REF --gpu h100 -o json` of gpuimg and of
// baseline, alternating which goes first in each run so that neither
// always meets a warmer page cache or a quieter machine, and prints the
// medians, their ratio and the median of the paired ratios.
func versus(ctx context.Context, dir, ref string, runs int, gpuimg, baseline string) error {
	var cur, base []sample
	var paired, pairedCPU []float64
	for i := range runs {
		bins := []string{gpuimg, baseline}
		if i%2 == 1 {
			bins = []string{baseline, gpuimg}
		}
		got := map[string]sample{}
		for _, bin := range bins {
			s, err := measure(ctx, dir, bin, "validate", ref, "--gpu", "h100", "-o", "json")
			if err != nil {
				return err
			}
			got[bin] = s
		}
		cur, base = append(cur, got[gpuimg]), append(base, got[baseline])
		paired = append(paired, got[gpuimg].wall.Seconds()/got[baseline].wall.Seconds())
		pairedCPU = append(pairedCPU, got[gpuimg].cpu.Seconds()/got[baseline].cpu.Seconds())
		fmt.Printf("run %d: gpuimg %.2fs (CPU %.2fs), baseline %.2fs (CPU %.2fs): %.3fx wall, %.3fx CPU\n", i+1,
			got[gpuimg].wall.Seconds(), got[gpuimg].cpu.Seconds(), got[baseline].wall.Seconds(), got[baseline].cpu.Seconds(), paired[i], pairedCPU[i])
	}
	c, b := median(cur), median(base)
	slices.Sort(paired)
	slices.Sort(pairedCPU)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "gpuimg validate --gpu h100", c.wall.Seconds(), float64(c.maxRSS)/1024)
	fmt.Printf("%-38s %8.2fs %8.0f MiB\n", "baseline validate --gpu h100", b.wall.Seconds(), float64(b.maxRSS)/1024)
	fmt.Printf("ratio gpuimg/baseline: time %.3fx (medians), %.3fx (median of paired runs), memory %.2fx\n",
		c.wall.Seconds()/b.wall.Seconds(), paired[len(paired)/2], float64(c.maxRSS)/float64(b.maxRSS))
	fmt.Printf("ratio gpuimg/baseline: CPU time %.3fx (median of paired runs; min %.3fx, max %.3fx)\n",
		pairedCPU[len(pairedCPU)/2], pairedCPU[0], pairedCPU[len(pairedCPU)-1])
	return nil
}

// median is the run of median wall time, with the largest max RSS of all.
func median(s []sample) sample {
	w := slices.Clone(s)
	slices.SortFunc(w, func(a, b sample) int { return int(a.wall - b.wall) })
	m := w[len(w)/2]
	for _, x := range s {
		m.maxRSS = max(m.maxRSS, x.maxRSS)
	}
	return m
}

// writeKey writes an ECDSA P-256 PEM private key for the signed run.
func writeKey(dir string) (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "bench.key")
	return p, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}
