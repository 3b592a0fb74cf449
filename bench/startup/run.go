package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/testenv"
	"github.com/gpuimg/gpuimg/matrix"
)

// variant is one image of one kind: A (Python 3.13, app v1), B (Python
// 3.14, app v1) or A2 (Python 3.13, app v2).
type variant struct {
	Name, Python, App string
}

var (
	varA  = variant{"A", "3.13", "1"}
	varB  = variant{"B", "3.14", "1"}
	varA2 = variant{"A2", "3.13", "2"}
)

// kind is a way of building the stack: naive, gpuimg (its default
// output: zstd), gpuimg-gzip (--compression gzip, for runtimes without
// zstd), gpuimg-estargz. refs maps a variant to its reference on the
// registry (without host).
type kind struct {
	Name        string
	Snapshotter string
	refs        map[string]string
	size        int64 // compressed bytes of variant A
	base        int64 // of which its bottom layer, the base (recompressed in gpuimg's zstd)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
}

func run(ctx context.Context, o options) (err error) {
	start := time.Now()
	dir, err := os.MkdirTemp("/tmp", "gs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx = testenv.WithProgress(ctx, os.Stderr)
	progress("starting the test environment (registry, buildkitd, PEP 503 index)")
	env, err := testenv.Start(ctx, dir)
	defer func() {
		if serr := env.Stop(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = serr
		}
	}()
	if err != nil {
		return err
	}
	host := env.Registry.Host

	progress("making the fixture: wheels at real size / %g, bases", o.scale)
	if err := cachedWheels(ctx, env.WheelDir, testenv.TwoPythons, o.scale); err != nil {
		return err
	}
	wheels, err := wheelSizes(env.WheelDir, o.scale)
	if err != nil {
		return err
	}
	aptDir, err := testenv.AptRepoDirOf(ctx, "sid", sidPackages())
	if err != nil {
		return err
	}
	repo, err := testenv.ServeAptRepo(aptDir)
	if err != nil {
		return err
	}
	defer repo.Close()
	runtimeRaw, runtimeExtra, base, err := pushBases(ctx, dir, host, o.scale, repo)
	if err != nil {
		return err
	}
	mf := filepath.Join(dir, "matrix.yaml")
	if err := os.WriteFile(mf, []byte(benchMatrix), 0o644); err != nil {
		return err
	}
	db, err := matrix.Load(mf)
	if err != nil {
		return err
	}

	progress("building naive and gpuimg images of variants A (Python 3.13), B (Python 3.14), A2 (A with new user code)")
	naive := &kind{Name: "naive", Snapshotter: "overlayfs", refs: map[string]string{}}
	gpu := &kind{Name: "gpuimg", Snapshotter: "overlayfs", refs: map[string]string{}}
	gz := &kind{Name: "gpuimg-gzip", Snapshotter: "overlayfs", refs: map[string]string{}}
	var plans []string
	variants := []variant{varA}
	if !o.traceOnly && o.wants("switch") {
		variants = append(variants, varB)
	}
	if !o.traceOnly && o.wants("update") {
		variants = append(variants, varA2)
	}
	for _, v := range variants {
		ctxDir := filepath.Join(dir, "ctx-"+v.Name)
		if err := appFiles(ctxDir, v.App); err != nil {
			return err
		}
		progress("building variant %s: naive (buildctl), then gpuimg (builder.Build: default, then --compression gzip)", v.Name)
		ref := "bench/naive:" + v.Name
		if !o.traceOnly {
			if err := buildNaive(ctx, env, ctxDir, v, host+"/"+ref); err != nil {
				return err
			}
		}
		naive.refs[v.Name] = ref
		ref = "bench/gpuimg:" + v.Name
		plan, err := buildGpuimg(ctx, env, db, ctxDir, v, host+"/"+ref, o.scale, "", o.noCompile)
		if err != nil {
			return err
		}
		if v == varA {
			plans = append(plans, plan)
		}
		gpu.refs[v.Name] = ref
		if o.traceOnly {
			continue
		}
		ref = "bench/gpuimg-gzip:" + v.Name
		if _, err := buildGpuimg(ctx, env, db, ctxDir, v, host+"/"+ref, o.scale, "gzip", o.noCompile); err != nil {
			return err
		}
		gz.refs[v.Name] = ref
	}
	if o.traceOnly {
		fmt.Fprintln(os.Stderr, plans[0])
		tr, err := traceStart(ctx, dir, host+"/"+gpu.refs[varA.Name], o)
		if err != nil {
			return err
		}
		rep := report{Trace: tr, Scale: o.scale}
		rep.print(os.Stdout)
		return nil
	}
	kinds := []*kind{naive, gpu, gz}
	for _, k := range kinds {
		if k.size, k.base, err = imageSizes(ctx, host+"/"+k.refs[varA.Name]); err != nil {
			return err
		}
	}
	// The compiler's share: variant A again without torch.compile's
	// compiler and headers, for its size only.
	var noCompileSize int64
	if !o.noCompile {
		progress("building variant A with --torch-compile=false, for the size of torch.compile's compiler and headers")
		ref := host + "/bench/gpuimg-no-torch-compile:" + varA.Name
		if _, err := buildGpuimg(ctx, env, db, filepath.Join(dir, "ctx-"+varA.Name), varA, ref, o.scale, "", true); err != nil {
			return err
		}
		if noCompileSize, err = imageSize(ctx, ref); err != nil {
			return err
		}
	}

	progress("tracing the start command of gpuimg A in a container on containerd")
	tr, err := traceStart(ctx, dir, host+"/"+gpu.refs[varA.Name], o)
	if err != nil {
		return err
	}
	stargzOK := false
	if o.stargz {
		if err := stargzCheck(ctx, filepath.Join(dir, "sg-check")); err != nil {
			progress("eStargz skipped: %v", err)
		} else {
			stargzOK = true
			es := &kind{Name: "gpuimg-estargz", Snapshotter: "stargz", refs: map[string]string{}}
			for _, v := range variants {
				ref := "bench/gpuimg-estargz:" + v.Name
				if _, err := images.Convert(ctx, host+"/"+gpu.refs[v.Name], host+"/"+ref, matrix.CompressionEstargz, images.WithPrioritizedFiles(tr.Prioritized...)); err != nil {
					return err
				}
				es.refs[v.Name] = ref
			}
			if es.size, es.base, err = imageSizes(ctx, host+"/"+es.refs[varA.Name]); err != nil {
				return err
			}
			kinds = append(kinds, es)
		}
	}

	var results []result
	for _, l := range links {
		proxy, err := StartProxy(host, l)
		if err != nil {
			return err
		}
		var scenarios []scenario
		if o.wants("cold") {
			scenarios = append(scenarios, scenario{"cold", nil, varA})
		}
		if l.Name == links[0].Name && o.wants("switch") {
			scenarios = append(scenarios, scenario{"switch", &varA, varB})
		}
		if l.Name == links[0].Name && o.wants("update") {
			scenarios = append(scenarios, scenario{"update", &varA, varA2})
		}
		for _, sc := range scenarios {
			for _, k := range kinds {
				var runs []result
				for i := range o.runs {
					progress("%s, %s, %s (run %d of %d)", l.Name, sc.Name, k.Name, i+1, o.runs)
					r, err := measure(ctx, dir, o, host, proxy, k, sc)
					if err != nil {
						proxy.Close()
						return err
					}
					r.Link = l.Name
					runs = append(runs, r)
				}
				results = append(results, median(runs))
			}
		}
		proxy.Close()
	}
	rep := report{Results: results, Kinds: kinds, Trace: tr, NoCompileSize: noCompileSize, NoCompile: o.noCompile, RuntimeExtra: runtimeExtra, RuntimeRaw: runtimeRaw, Base: base, Wheels: wheels, Scale: o.scale, Downloads: o.downloads, Unpacks: o.unpacks, Runs: o.runs,
		Stargz: stargzOK, Plan: plans, Took: time.Since(start)}
	if o.keep != "" {
		if err := rep.save(o.keep); err != nil {
			return err
		}
	}
	rep.print(os.Stdout)
	return nil
}

// benchMatrix tells the resolver what the fixture bases really hold.
const benchMatrix = `# The startup benchmark's bases are a Debian sid root filesystem with two
# Pythons, pushed under NVIDIA's ubuntu22.04 tag names.
sources:
  - id: gpuimg-bench-startup
    title: gpuimg startup benchmark (Debian sid rootfs with Python 3.13 and 3.14 standing in for nvidia/cuda ubuntu22.04 images)
    url: https://github.com/gpuimg/gpuimg/tree/main/bench/startup
os:
  - name: ubuntu22.04
    family: ubuntu
    pythons: ["3.13", "3.14"]
    source: gpuimg-bench-startup
`

// buildNaive builds the stack the way most Dockerfiles do: the runtime
// flavor, the user's files, then one RUN that makes a venv and pip
// installs everything (so a code change re-runs it), pushed to ref.
func buildNaive(ctx context.Context, env *testenv.Env, ctxDir string, v variant, ref string) error {
	df := fmt.Sprintf(`FROM nvidia/cuda:%s-runtime-%s
COPY app /app
RUN python%s -m venv /opt/venv && /opt/venv/bin/pip install --disable-pip-version-check --no-cache-dir --index-url %s torch==%s torchvision==%s torchaudio==%s
ENV PATH=/opt/venv/bin:$PATH
`, cudaImage, osName, v.Python, env.Index.URL, torchVersion, visionVersion, audioVersion)
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	return buildctl(ctx, env, "build", "--frontend", "dockerfile.v0", "--local", "context="+ctxDir, "--local", "dockerfile="+ctxDir,
		"--output", "type=image,name="+ref+",push=true,registry.insecure=true")
}

// buildGpuimg builds variant v through the builder package, as gpuimg
// build does (same resolver, same plan: the layer plan is the builder's),
// with the layer compression given ("": gpuimg's default) and
// torch.compile's compiler unless noCompile, and pushes it
// to ref. The builder's large-wheel threshold is a size
// like the others, so it is divided by scale too: the fixture's wheels
// get the layers the real wheels would get. It returns the generated
// Dockerfile.
func buildGpuimg(ctx context.Context, env *testenv.Env, db *matrix.DB, ctxDir string, v variant, ref string, scale float64, compression matrix.Compression, noCompile bool) (string, error) {
	cuda, err := matrix.ParseConstraint("12.6")
	if err != nil {
		return "", err
	}
	py, err := matrix.ParseConstraint(v.Python)
	if err != nil {
		return "", err
	}
	torch, err := matrix.ParseConstraint(torchVersion)
	if err != nil {
		return "", err
	}
	stack, err := db.Resolve(matrix.Constraints{CUDA: cuda, Python: py, Torch: &torch, OS: osName})
	if err != nil {
		return "", fmt.Errorf("resolve the bench stack: %w", err)
	}
	req := builder.Request{
		Stack:       stack,
		Extras:      builder.Extras{Copy: []string{"app:/app"}},
		ContextDir:  ctxDir,
		Tags:        []string{ref},
		Push:        true,
		Mirrors:     images.Mirrors{"index.docker.io": env.Registry.Host},
		PipIndexURL: env.Index.URL,
		Progress:    io.Discard,
		LargeWheel:  int64(float64(builder.DefaultLargeWheel) / scale),
		Compression: compression,
		// torch.compile's compiler and headers, as every default image
		// has them: apt installs them from the loopback sid repository
		// (sidPackages). They are real size, not scaled.
		NoTorchCompile: noCompile,
	}
	plan, err := builder.Prepare(ctx, req)
	if err != nil {
		return "", err
	}
	c, err := builder.Connect(ctx, env.BuildKit.Address())
	if err != nil {
		return "", err
	}
	defer c.Close()
	if _, err := builder.Build(ctx, c, req, plan); err != nil {
		return "", fmt.Errorf("gpuimg build of variant %s: %w", v.Name, err)
	}
	return plan.Dockerfile, nil
}

// imageSize is the compressed size of ref's layers.
func imageSize(ctx context.Context, ref string) (int64, error) {
	n, _, err := imageSizes(ctx, ref)
	return n, err
}

// imageSizes is the compressed size of ref's layers, and of its bottom
// layer.
func imageSizes(ctx context.Context, ref string) (total, bottom int64, err error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return 0, 0, err
	}
	img, err := remote.Image(r, remote.WithContext(ctx))
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range m.Layers {
		total += l.Size
	}
	if len(m.Layers) > 0 {
		bottom = m.Layers[0].Size
	}
	return total, bottom, nil
}

func buildctl(ctx context.Context, env *testenv.Env, args ...string) error {
	cmd := execCommand(ctx, env.Tools.Buildctl, append([]string{"--addr", env.BuildKit.Address()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("buildctl %s: %w\n%s", strings.Join(args, " "), err, lastLines(string(out), 30))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
