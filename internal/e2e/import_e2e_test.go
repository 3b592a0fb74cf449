package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// importTargets are the fleets of TestImagesImport, as a team writes
// them in a --matrix-file: a SageMaker-like one (Docker schema 2, gzip,
// one linux/amd64 manifest, serve on 8080 as root), one whose hosts run
// driver 470, and one with a 1 MB size limit.
const importTargets = `sources: [{id: t, url: https://wiki.example.com/fleets}]
targets:
  - {name: test/sagemaker, driver: 535.104.05, gpus: [a100], platforms: [linux/amd64], media_types: [docker], index: false, attestations: false, compressions: [gzip], registry: any, runtime: {args: [serve, train], port: 8080, health: /ping, user: root}, source: t}
  - {name: test/old-driver, driver: 470.57.02, gpus: [a100], platforms: [linux/amd64], media_types: [docker], compressions: [gzip], registry: any, source: t}
  - {name: test/tiny, driver: 535.104.05, platforms: [linux/amd64], media_types: [docker], compressions: [gzip], max_size: 1MB, size_of: uncompressed, registry: any, source: t}
  - {name: test/docker-any, platforms: [linux/amd64], media_types: [docker], index: false, attestations: false, compressions: [gzip], registry: any, source: t}
`

// layerTar is a layer holding files (path → content) with their modes.
func layerTar(t *testing.T, files map[string]string, mode int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range sortedKeys(files) {
		must(t, tw.WriteHeader(&tar.Header{Name: p, Mode: mode, Size: int64(len(files[p])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[p]))
		must(t, err)
	}
	must(t, tw.Close())
	return buf.Bytes()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// serveBinary builds a static program that prints "serving ARGS": the
// server of the test image.
func serveBinary(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module serve\n\ngo 1.22\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n)\n\nfunc main() { fmt.Println(\"serving \" + strings.Join(os.Args[1:], \" \")) }\n"), 0o644))
	gobin, err := exec.LookPath("go") // go test puts its own go first on PATH
	if err != nil {
		t.Skipf("no go command to build the test server: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags=-s -w", "-o", "serve", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "serve"))
	must(t, err)
	return b
}

// skopeoIndex is the raw index skopeo reads at ref (any transport), its
// number of manifests and of attestation manifests among them.
func skopeoIndex(t *testing.T, ref string) (raw []byte, manifests, attestations int) {
	t.Helper()
	raw, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", ref).Output()
	if err != nil {
		t.Fatalf("skopeo inspect --raw %s: %v", ref, err)
	}
	var ix v1.IndexManifest
	must(t, json.Unmarshal(raw, &ix))
	for _, d := range ix.Manifests {
		if images.IsAttestation(d) {
			attestations++
		}
	}
	return raw, len(ix.Manifests), attestations
}

// catalogHas says whether the registry holds repository repo.
func catalogHas(t *testing.T, host, repo string) bool {
	t.Helper()
	resp, err := http.Get("http://" + host + "/v2/_catalog")
	must(t, err)
	defer resp.Body.Close()
	var c struct{ Repositories []string }
	must(t, json.NewDecoder(resp.Body).Decode(&c))
	return slices.Contains(c.Repositories, repo)
}

// TestImagesImport imports a BuildKit-style OCI image (zstd layers,
// provenance attestations in an index) for a Docker-schema2/gzip target on
// the real distribution registry: skopeo reads a Docker v2 schema 2
// manifest with gzip layers and the same diff IDs, a real dockerd pulls
// and runs it; refusals (driver too old, arm64 only, over the size limit)
// push nothing.
func TestImagesImport(t *testing.T) {
	testenv.Require(t, "starts a registry and dockerd", testenv.Slow, testenv.Root)
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	must(t, testenv.EnsurePackages(ctx, "skopeo"))
	reg, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir())
	must(t, err)
	defer reg.Stop()
	mf := filepath.Join(t.TempDir(), "fleets.yaml")
	must(t, os.WriteFile(mf, []byte(importTargets), 0o644))

	sp := "opt/venv/lib/python3.10/site-packages/"
	stack := layerTar(t, map[string]string{
		"etc/os-release":                            "ID=ubuntu\nVERSION_ID=\"22.04\"\n",
		"usr/local/cuda-12.2/version.json":          `{"cuda":{"version":"12.2.2"}}`,
		"opt/venv/pyvenv.cfg":                       "version = 3.10.12\n",
		sp + "torch/version.py":                     "__version__ = '2.3.1+cu121'\ncuda = '12.1'\n",
		sp + "torch-2.3.1+cu121.dist-info/METADATA": "Name: torch\nVersion: 2.3.1+cu121\n",
	}, 0o644)
	server := layerTar(t, map[string]string{"serve": string(serveBinary(t))}, 0o755)
	edit := func(c *v1.ConfigFile) {
		c.Config.Entrypoint = []string{"/serve"}
		c.Config.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
		c.Config.Env = []string{"NVIDIA_REQUIRE_CUDA=cuda>=12.2"}
	}
	idx, err := testenv.AttestedIndex([][]byte{stack, server}, []string{"amd64", "arm64"}, edit)
	must(t, err)
	src := reg.Host + "/ci/model:oci"
	sr, _ := name.ParseReference(src, name.Insecure)
	must(t, remote.WriteIndex(sr, idx))
	srcDigest, _ := idx.Digest()
	im, _ := idx.IndexManifest()
	amd, err := idx.Image(im.Manifests[0].Digest)
	must(t, err)
	amdCfg, _ := amd.ConfigFile()
	armOnly, err := testenv.AttestedIndex([][]byte{stack, server}, []string{"arm64"}, edit)
	must(t, err)
	ar, _ := name.ParseReference(reg.Host+"/ci/model:arm64", name.Insecure)
	must(t, remote.WriteIndex(ar, armOnly))

	dst := reg.Host + "/sm/model:v1"
	t.Run("validate --target on the source", func(t *testing.T) {
		out, errOut, code := run(t, "validate", src, "--target", "test/sagemaker", "--matrix-file", mf, "-o", "json")
		if code != cli.ExitFailed {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep struct {
			Checks []struct{ Name, Status, Message string }
		}
		must(t, json.Unmarshal([]byte(out), &rep))
		st := map[string]string{}
		for _, c := range rep.Checks {
			st[strings.TrimPrefix(c.Name, "target:test/sagemaker:")] = c.Status
		}
		for k, want := range map[string]string{"platform": "pass", "index": "fail", "attestations": "fail", "media-type": "fail", "compression": "fail", "driver": "pass", "entrypoint": "pass", "port": "pass", "user": "pass"} {
			if st[k] != want {
				t.Errorf("%s: %q, want %s (%v)", k, st[k], want, st)
			}
		}
	})

	t.Run("dry run", func(t *testing.T) {
		out, errOut, code := run(t, "images", "import", src, "--target", "test/sagemaker", "--to", dst, "--matrix-file", mf, "--dry-run")
		if code != 0 || !strings.Contains(out, "zstd -> gzip") || !strings.Contains(out, "dry run") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if catalogHas(t, reg.Host, "sm/model") {
			t.Error("the dry run pushed")
		}
	})

	var res images.ImportResult
	t.Run("import", func(t *testing.T) {
		out, errOut, code := run(t, "images", "import", src, "--target", "test/sagemaker", "--to", dst, "--matrix-file", mf, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		must(t, json.Unmarshal([]byte(out), &res))
		if res.SourceDigest != srcDigest.String() || !res.DigestChanged || res.SourceLabel != images.SourceDigestLabel || res.Ref != reg.Host+"/sm/model@"+res.Digest || len(res.Changes) != 3 {
			t.Errorf("result %s", out)
		}
		raw, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+dst).Output()
		must(t, err)
		var m struct {
			MediaType string
			Config    struct{ MediaType string }
			Layers    []struct{ MediaType string }
		}
		must(t, json.Unmarshal(raw, &m))
		if m.MediaType != "application/vnd.docker.distribution.manifest.v2+json" || m.Config.MediaType != "application/vnd.docker.container.image.v1+json" || len(m.Layers) != 2 {
			t.Errorf("skopeo reads %s", raw)
		}
		for _, l := range m.Layers {
			if l.MediaType != "application/vnd.docker.image.rootfs.diff.tar.gzip" {
				t.Errorf("layer %s", l.MediaType)
			}
		}
		if got := digestOf(raw); got != res.Digest {
			t.Errorf("skopeo's manifest digest %s, import says %s", got, res.Digest)
		}
		cfgRaw, err := exec.Command("skopeo", "inspect", "--config", "--raw", "--tls-verify=false", "docker://"+dst).Output()
		must(t, err)
		var cfg v1.ConfigFile
		must(t, json.Unmarshal(cfgRaw, &cfg))
		if !slices.Equal(cfg.RootFS.DiffIDs, amdCfg.RootFS.DiffIDs) {
			t.Errorf("diff IDs %v, source %v", cfg.RootFS.DiffIDs, amdCfg.RootFS.DiffIDs)
		}
		if cfg.Config.Labels[images.SourceDigestLabel] != srcDigest.String() {
			t.Errorf("labels %v", cfg.Config.Labels)
		}
		_, errOut, code = run(t, "validate", dst, "--target", "test/sagemaker", "--matrix-file", mf)
		if code != 0 {
			t.Errorf("the imported image fails validate --target: exit %d %s", code, errOut)
		}
		// Two targets: each one's checks, the verdict of all.
		out, _, code = run(t, "validate", dst, "--target", "test/sagemaker", "--target", "test/tiny", "--matrix-file", mf, "-o", "json")
		var rep struct {
			Checks  []struct{ Name, Status string }
			Verdict string
		}
		must(t, json.Unmarshal([]byte(out), &rep))
		var failed []string
		sm := 0
		for _, c := range rep.Checks {
			if c.Status == "fail" {
				failed = append(failed, c.Name)
			}
			if strings.HasPrefix(c.Name, "target:test/sagemaker:") {
				sm++
			}
		}
		if code != cli.ExitFailed || rep.Verdict != "fail" || !slices.Equal(failed, []string{"target:test/tiny:size"}) || sm < 8 {
			t.Errorf("two targets: exit %d, failed %v, %d sagemaker checks", code, failed, sm)
		}
		_, errOut, code = run(t, "validate", dst, "--target", "test/sagemakr", "--matrix-file", mf)
		if code != cli.ExitInvalid || !strings.Contains(errOut, "did you mean test/sagemaker") {
			t.Errorf("unknown target: exit %d %q", code, errOut)
		}
	})

	t.Run("docker pulls and runs it", func(t *testing.T) {
		if res.Digest == "" {
			t.Skip("no import")
		}
		dir, err := os.MkdirTemp("/tmp", "gi-")
		must(t, err)
		d, err := testenv.StartDockerd(ctx, dir)
		must(t, err)
		defer d.Stop()
		if out, err := exec.Command("docker", "-H", d.Host, "pull", res.Ref).CombinedOutput(); err != nil {
			t.Fatalf("docker pull %s: %v\n%s", res.Ref, err, out)
		}
		out, err := exec.Command("docker", "-H", d.Host, "run", "--rm", "--network", "none", res.Ref, "serve").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "serving serve" {
			t.Fatalf("docker run: %v\n%s", err, out)
		}
		// The pulled image, read back from the daemon, is already in the
		// target's form: imported without a change.
		t.Setenv("DOCKER_HOST", d.Host)
		jout, errOut, code := run(t, "images", "import", "docker-daemon:"+res.Ref, "--target", "test/sagemaker", "--to", reg.Host+"/sm/model:daemon", "--matrix-file", mf, "-o", "json")
		if code != 0 {
			t.Fatalf("import from the daemon: exit %d %s", code, errOut)
		}
		var r images.ImportResult
		must(t, json.Unmarshal([]byte(jout), &r))
		if len(r.Changes) != 0 || r.Digest == "" {
			t.Errorf("import from the daemon: %s", jout)
		}
		cfgRaw, err := exec.Command("skopeo", "inspect", "--config", "--raw", "--tls-verify=false", "docker://"+reg.Host+"/sm/model:daemon").Output()
		must(t, err)
		var cfg v1.ConfigFile
		must(t, json.Unmarshal(cfgRaw, &cfg))
		if !slices.Equal(cfg.RootFS.DiffIDs, amdCfg.RootFS.DiffIDs) {
			t.Errorf("diff IDs through the daemon %v, source %v", cfg.RootFS.DiffIDs, amdCfg.RootFS.DiffIDs)
		}
	})

	for _, tt := range []struct {
		name, src, target string
		reasons           []string
	}{
		// 470.57.02 is below the image's floor, and it reports CUDA 11.4, so
		// the NVIDIA runtime refuses the image's cuda>= requirement too.
		{"driver too old for the fleet", src, "test/old-driver", []string{"target:test/old-driver:driver", "target:test/old-driver:driver/require-cuda"}},
		{"arm64 only", reg.Host + "/ci/model:arm64", "test/sagemaker", []string{"target:test/sagemaker:platform"}},
		{"over the size limit", src, "test/tiny", []string{"target:test/tiny:size"}},
	} {
		t.Run("refuses: "+tt.name, func(t *testing.T) {
			repo := "refused/" + strings.ReplaceAll(tt.target, "/", "-")
			out, errOut, code := run(t, "images", "import", tt.src, "--target", tt.target, "--to", reg.Host+"/"+repo+":v1", "--matrix-file", mf, "-o", "json")
			if code != cli.ExitFailed || !strings.Contains(errOut, "nothing pushed") || strings.Count(errOut, "gpuimg:") != 1 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			var r images.ImportResult
			must(t, json.Unmarshal([]byte(out), &r))
			var failed []string
			for _, c := range r.Checks {
				if c.Status == "fail" {
					failed = append(failed, c.Name)
				}
			}
			if !slices.Equal(failed, tt.reasons) {
				t.Errorf("reasons %v, want %v", failed, tt.reasons)
			}
			if catalogHas(t, reg.Host, repo) {
				t.Errorf("a refused import pushed to %s", repo)
			}
		})
	}

	t.Run("docker-archive source, nothing to change", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "model.tar")
		tag, _ := name.NewTag("example.com/ml/model:v1")
		must(t, tarball.WriteToFile(archive, tag, smallImage(t, "cuda>=12.2")))
		out, errOut, code := run(t, "images", "import", "docker-archive:"+archive, "--target", "test/old-driver", "--to", reg.Host+"/ar/model:v1", "--matrix-file", mf)
		if code != cli.ExitFailed || !strings.Contains(errOut, "driver 470.57.02 is below") {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		out, errOut, code = run(t, "images", "import", "docker-archive:"+archive, "--target", "test/tiny", "--to", reg.Host+"/ar/model:v1", "--matrix-file", mf, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		var r images.ImportResult
		must(t, json.Unmarshal([]byte(out), &r))
		if len(r.Changes) != 0 || r.DigestChanged || r.Digest != r.SourceDigest {
			t.Errorf("result %s", out)
		}
	})

	t.Run("export keeps the attestations; skopeo reads the layout", func(t *testing.T) {
		dir := t.TempDir()
		for _, tt := range []struct{ format, file, skopeo string }{
			{"oci", "model-layout", "oci:"},
			{"oci-archive", "model.oci.tar", "oci-archive:"},
		} {
			p := filepath.Join(dir, tt.file)
			out, errOut, code := run(t, "images", "export", src, p, "--format", tt.format)
			if code != 0 || !strings.Contains(out, "digests verified") || !strings.Contains(out, "kept 2 attestation manifests") {
				t.Fatalf("export %s: exit %d %s %s", tt.format, code, out, errOut)
			}
			raw, n, att := skopeoIndex(t, tt.skopeo+p)
			if digestOf(raw) != srcDigest.String() || n != 4 || att != 2 {
				t.Errorf("%s: skopeo reads %s (%d manifests, %d attestations), want %s with 2", tt.format, digestOf(raw), n, att, srcDigest)
			}
			// skopeo picks the linux/amd64 image out of the index and
			// reads its config: the layer diff IDs are the source's.
			out2, err := exec.Command("skopeo", "inspect", "--override-os", "linux", "--override-arch", "amd64", tt.skopeo+p).Output()
			if err != nil {
				t.Fatalf("skopeo inspect %s%s: %v", tt.skopeo, p, err)
			}
			var info struct {
				Architecture string
				Layers       []string
			}
			must(t, json.Unmarshal(out2, &info))
			if info.Architecture != "amd64" || len(info.Layers) != 2 {
				t.Errorf("%s: skopeo inspect %s", tt.format, out2)
			}
		}
	})

	t.Run("a BuildKit-built index with provenance exports and imports", func(t *testing.T) {
		// A real buildkitd builds FROM scratch for two platforms with
		// max-mode provenance, zstd layers and OCI media types, and pushes
		// the index (with its attestation manifests) to the registry.
		must(t, testenv.EnsurePackages(ctx, "runc")) // buildkitd's OCI worker
		dir, err := os.MkdirTemp("/tmp", "gx-")
		must(t, err)
		defer os.RemoveAll(dir)
		bk := &builder.Local{StateDir: filepath.Join(dir, "bk"), Buildkitd: tools.Buildkitd, InsecureRegistries: []string{reg.Host}}
		c, err := bk.Ensure(ctx)
		must(t, err)
		c.Close()
		defer func() {
			if err := bk.Stop(context.WithoutCancel(ctx)); err != nil {
				t.Errorf("stop buildkitd: %v", err)
			}
		}()
		bctx := filepath.Join(dir, "ctx")
		must(t, os.MkdirAll(bctx, 0o755))
		must(t, os.WriteFile(filepath.Join(bctx, "serve"), serveBinary(t), 0o755))
		must(t, os.WriteFile(filepath.Join(bctx, "Dockerfile"), []byte("FROM scratch\nCOPY serve /serve\nEXPOSE 8080\nENTRYPOINT [\"/serve\"]\n"), 0o644))
		built := reg.Host + "/bk/model:v1"
		cmd := exec.CommandContext(ctx, tools.Buildctl, "--addr", bk.Address(), "build", "--frontend", "dockerfile.v0",
			"--local", "context="+bctx, "--local", "dockerfile="+bctx, "--opt", "platform=linux/amd64,linux/arm64",
			"--opt", "attest:provenance=mode=max",
			"--output", "type=image,name="+built+",push=true,registry.insecure=true,oci-mediatypes=true,compression=zstd,force-compression=true")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("buildctl build: %v\n%s", err, out)
		}
		raw, n, att := skopeoIndex(t, "docker://"+built)
		if att != 2 || n != 4 {
			t.Fatalf("BuildKit pushed %d manifests, %d attestations: %s", n, att, raw)
		}

		layout := filepath.Join(dir, "layout")
		out, errOut, code := run(t, "images", "export", built, layout, "--format", "oci")
		if code != 0 || !strings.Contains(out, "kept 2 attestation manifests") {
			t.Fatalf("export: exit %d %s %s", code, out, errOut)
		}
		back, err := exec.Command("skopeo", "inspect", "--raw", "oci:"+layout).Output()
		if err != nil || digestOf(back) != digestOf(raw) {
			t.Fatalf("skopeo reads the layout as %s (%v), the registry's index is %s", digestOf(back), err, digestOf(raw))
		}
		if out, err := exec.Command("skopeo", "inspect", "--override-os", "linux", "--override-arch", "arm64", "oci:"+layout).CombinedOutput(); err != nil || !strings.Contains(string(out), `"Architecture": "arm64"`) {
			t.Errorf("skopeo inspect oci:%s (arm64): %v\n%s", layout, err, out)
		}
		// skopeo copies it on, attestations and all.
		if out, err := exec.Command("skopeo", "copy", "--all", "--dest-tls-verify=false", "oci:"+layout, "docker://"+reg.Host+"/bk/model:copied").CombinedOutput(); err != nil {
			t.Errorf("skopeo copy --all oci:%s: %v\n%s", layout, err, out)
		}

		// Imported from the layout for a Docker-schema2/gzip fleet:
		// the attestations go with the index.
		jout, errOut, code := run(t, "images", "import", "oci:"+layout, "--target", "test/docker-any", "--to", reg.Host+"/sm/bk:v1", "--matrix-file", mf, "-o", "json")
		if code != 0 {
			t.Fatalf("import: exit %d %s %s", code, jout, errOut)
		}
		var r images.ImportResult
		must(t, json.Unmarshal([]byte(jout), &r))
		var whats []string
		for _, ch := range r.Changes {
			whats = append(whats, ch.What)
		}
		if r.SourceDigest != digestOf(raw) || strings.Join(whats, ",") != "platform,media-type,compression" {
			t.Errorf("import of the BuildKit index: %s", jout)
		}
		m, err := exec.Command("skopeo", "inspect", "--raw", "--tls-verify=false", "docker://"+reg.Host+"/sm/bk:v1").Output()
		must(t, err)
		if !strings.Contains(string(m), "application/vnd.docker.distribution.manifest.v2+json") || !strings.Contains(string(m), "application/vnd.docker.image.rootfs.diff.tar.gzip") {
			t.Errorf("imported manifest: %s", m)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		_, errOut, code := run(t, "images", "import", src, "--target", "test/sagemakr", "--to", dst, "--matrix-file", mf)
		if code != cli.ExitInvalid || !strings.Contains(errOut, "did you mean test/sagemaker") {
			t.Errorf("unknown target: exit %d %q", code, errOut)
		}
		_, errOut, code = run(t, "images", "import", src, "--target", "test/sagemaker", "--matrix-file", mf)
		if code != cli.ExitInvalid || !strings.Contains(errOut, "--to") {
			t.Errorf("no --to: exit %d %q", code, errOut)
		}
	})

	t.Run("401 says how to log in", func(t *testing.T) {
		hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
		must(t, err)
		htpasswd := filepath.Join(t.TempDir(), "htpasswd")
		must(t, os.WriteFile(htpasswd, []byte(fmt.Sprintf("ci:%s\n", hash)), 0o600))
		locked, err := testenv.StartRegistry(ctx, tools.Registry, t.TempDir(), testenv.RegistryOptions{Htpasswd: htpasswd})
		must(t, err)
		defer locked.Stop()
		t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
		_, errOut, code := run(t, "images", "import", src, "--target", "test/sagemaker", "--to", locked.Host+"/sm/model:v1", "--matrix-file", mf)
		if code != cli.ExitInvalid || !strings.Contains(errOut, "refused the credentials") || !strings.Contains(errOut, "docker login "+locked.Host) {
			t.Errorf("exit %d %q", code, errOut)
		}
	})
}
