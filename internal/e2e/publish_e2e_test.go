package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/publish"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestPublishEndToEnd publishes a 2-variant publish file (CUDA 12.2 +
// PyTorch 2.3 for two GPUs: one real build, the second answered from
// BuildKit's cache) on a real buildkitd to a real registry, through the
// mirror flags, as TestBuildEndToEnd builds: the tags, the inputs label,
// the attached report, the mirror and the promoted tag are checked in the
// registry, and each is signed (signing:) so that gpuimg verify --require
// signature,sbom,validation passes on its tag. A second run skips both
// without reaching any builder, and a variant that fails validation gets
// no tag and nothing signed. Then testPublishPool runs
// issue 11's pool scenario on the same environment. Root is needed (runc).
func TestPublishEndToEnd(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	// Parallel: its environment (registry, buildkitd, files) is its own, and it
	// sets no process environment; CI has 2 cores and waits are overlapped.
	t.Parallel()
	ctx := t.Context()
	env := sharedEnv(t, "gp-")
	if _, err := env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04"); err != nil {
		t.Fatal(err)
	}
	if err := env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// signing: every variant published is signed, its reports and SBOM
	// attested, with a PEM key (no process environment: t.Parallel).
	signKey, signPub := pemKeyPair(t, dir, "sign")
	repo := env.Registry.Host + "/gpuimg/pub"
	mirror := env.Registry.Host + "/gpuimg/pub-mirror"
	file := func(name, repo, driver string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(`repository: `+repo+`
tag: "{torch}-cu{cuda_short}-{gpu}"
matrix:
  cuda: ["12.2"]
  torch: ["2.3"]
  gpu: [h100, l4]
validate: {driver: `+driver+`}
mirrors: [`+mirror+`]
promote: {tags: ["latest"]}
signing: {key: `+signKey+`}
`), 0o644))
		return p
	}
	// --torch-compile=false: torch.compile's gcc and headers add about 14 s
	// to a cold build and 2 s to a cached one on 2 cores (apt in the plan
	// stage and in the image, a 239 MB larger layer to export and
	// rewrite), on every variant; TestBuildPythonlessReproducible
	// installs them end to end.
	args := func(f, builder, reportDir string, more ...string) []string {
		return append([]string{"publish", "-f", f, "--torch-compile=false", "--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(),
			"--pip-index-url", env.Index.URL, "--builder", builder, "--report-dir", reportDir, "--progress", "plain"}, more...)
	}
	good := file("publish.yaml", repo, "535.104.05")
	head := func(ref string) (string, map[string]string, error) {
		r, err := name.ParseReference(ref, name.Insecure)
		must(t, err)
		img, err := remote.Image(r, remote.WithContext(ctx))
		if err != nil {
			return "", nil, err
		}
		d, err := img.Digest()
		must(t, err)
		cfg, err := img.ConfigFile()
		must(t, err)
		return d.String(), cfg.Config.Labels, nil
	}

	// The pool's first builder does not exist: sticky placement puts both
	// variants (same base, same Python) on it, and they move to the
	// second, real one.
	first := filepath.Join(dir, "first")
	dead := "unix://" + filepath.Join(dir, "no-buildkitd.sock")
	out, errOut, code := run(t, args(good, dead, first, "--builder", env.BuildKit.Address())...)
	if code != 0 {
		t.Fatalf("first publish exited %d:\n%s\n%s", code, out, lastLines(errOut, 40))
	}
	t.Logf("first run:\n%s", lastLines(errOut, 12))
	rep, err := publish.ReadReport(filepath.Join(first, publish.ReportJSON))
	must(t, err)
	if len(rep.Results) != 2 {
		t.Fatalf("first run: %d results, want 2: %+v", len(rep.Results), rep.Results)
	}
	cached := 0
	for _, res := range rep.Results {
		if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], dead) || res.TotalSteps == 0 {
			t.Errorf("%s: notes %q (want the retry away from %s), %d/%d steps cached", res.Variant.Name, res.Notes, dead, res.CachedSteps, res.TotalSteps)
		}
		cached += res.CachedSteps
		r, err := name.ParseReference(res.Variant.Tag, name.Insecure)
		must(t, err)
		desc, err := remote.Get(r, remote.WithContext(ctx))
		must(t, err)
		mf, err := desc.Image()
		must(t, err)
		m, err := mf.Manifest()
		must(t, err)
		if m.Annotations[publish.InputsLabel] == "" {
			t.Errorf("%s: manifest annotations %v lack %s", r, m.Annotations, publish.InputsLabel)
		}
		if res.Compression != builder.DefaultCompression {
			t.Errorf("%s: report says %q layers, want %s (the default)", r, res.Compression, builder.DefaultCompression)
		}
		for _, l := range m.Layers {
			if l.MediaType != types.OCILayerZStd {
				t.Errorf("%s: layer %s is %s, want %s", r, l.Digest, l.MediaType, types.OCILayerZStd)
			}
		}
	}
	if cached == 0 {
		t.Error("the second variant reused no cached step of the first")
	}
	if !strings.Contains(errOut, "retrying on "+env.BuildKit.Address()) {
		t.Errorf("progress does not report the retry:\n%s", lastLines(errOut, 20))
	}
	for _, r := range rep.Results {
		if r.Outcome != publish.Published || r.Digest == "" || r.Builder != env.BuildKit.Address() {
			t.Errorf("first run, %s: outcome %s digest %q builder %q error %q", r.Variant.Name, r.Outcome, r.Digest, r.Builder, r.Error)
			continue
		}
		digest, labels, err := head(r.Variant.Tag)
		if err != nil {
			t.Errorf("tag %s: %v", r.Variant.Tag, err)
			continue
		}
		if digest != r.Digest || labels[publish.InputsLabel] != r.Variant.Inputs || r.Variant.Inputs == "" {
			t.Errorf("%s: digest %s (report %s), inputs label %q (report %q)", r.Variant.Tag, digest, r.Digest, labels[publish.InputsLabel], r.Variant.Inputs)
		}
		_, reports, err := images.Referrers(ctx, r.Variant.Tag, images.ReportArtifactType, images.WithInsecure(true))
		if err != nil || len(reports) != 1 || reports[0].Annotations[images.AnnotationVerdict] != "pass" {
			t.Errorf("%s: attached reports %+v, %v", r.Variant.Tag, reports, err)
		}
		if md, _, err := head(mirror + ":" + r.Variant.Name); err != nil || md != r.Digest {
			t.Errorf("mirror of %s: %s, %v", r.Variant.Name, md, err)
		}
		// report.json carries the signing outcome: signed, by the key's
		// fingerprint, the digest with its referrer, the statements.
		if sg := r.Signing; sg == nil || sg.Status != publish.SignSigned || !strings.HasPrefix(sg.Key.Fingerprint, "sha256:") || sg.Key.Ref != signKey ||
			sg.Format != "bundle" || len(sg.Signatures) == 0 || sg.Signatures[0].Digest != r.Digest || sg.Signatures[0].Referrer == "" ||
			len(sg.SBOMs) == 0 || sg.Count(publish.AttestValidation) == 0 || sg.Count(publish.AttestSBOM) == 0 {
			t.Errorf("%s: report.json's signing %+v; want signed by %s, %s signed with its referrer, SBOM and validation statements", r.Variant.Name, sg, signKey, r.Digest)
		}
		if out, errb, code := run(t, "verify", r.Variant.Tag, "--key", signPub, "--require", "signature,sbom,validation", "--insecure-registry", env.Registry.Host); code != 0 {
			t.Errorf("gpuimg verify %s --require signature,sbom,validation: exit %d\n%s%s", r.Variant.Tag, code, out, errb)
		}
	}
	// latest belongs to the last variant of the plan (L4).
	if d, _, err := head(repo + ":latest"); err != nil || d != rep.Results[1].Digest {
		t.Errorf("latest -> %s (%v), want the L4 variant %s", d, err, rep.Results[1].Digest)
	}
	for _, f := range []string{publish.ReportJSON, publish.ReportMarkdown, publish.ReportJUnit, publish.ReportHTML} {
		if _, err := os.Stat(filepath.Join(first, f)); err != nil {
			t.Errorf("report file: %v", err)
		}
	}

	t.Run("rerun: both unchanged, no builder reached", func(t *testing.T) {
		// A builder that does not exist: any solve would fail the run.
		second := filepath.Join(dir, "second")
		out, errOut, code := run(t, args(good, "unix:///nonexistent/buildkitd.sock", second, "--since", filepath.Join(first, publish.ReportJSON))...)
		if code != 0 {
			t.Fatalf("second publish exited %d:\n%s\n%s", code, out, lastLines(errOut, 40))
		}
		rep2, err := publish.ReadReport(filepath.Join(second, publish.ReportJSON))
		must(t, err)
		for i, r := range rep2.Results {
			if r.Outcome != publish.Unchanged || r.Digest != rep.Results[i].Digest || r.Builder != "" || r.BuildTime != 0 {
				t.Errorf("second run, %s: outcome %s digest %s builder %q build time %s", r.Variant.Name, r.Outcome, r.Digest, r.Builder, r.BuildTime)
			}
			if r.Signing == nil || r.Signing.Status != publish.SignVerified || rep.Results[i].Signing == nil || r.Signing.Key != rep.Results[i].Signing.Key {
				t.Errorf("second run, %s: signing %+v, want verified with the first run's key", r.Variant.Name, r.Signing)
			}
		}
		if !strings.Contains(errOut, "unchanged") {
			t.Errorf("progress lacks unchanged lines:\n%s", errOut)
		}
		md, err := os.ReadFile(filepath.Join(second, publish.ReportMarkdown))
		must(t, err)
		if !strings.Contains(string(md), "unchanged") {
			t.Errorf("report.md:\n%s", md)
		}
	})

	t.Run("a variant failing validation gets no tag", func(t *testing.T) {
		failRepo := env.Registry.Host + "/gpuimg/pub-fail"
		bad := file("bad.yaml", failRepo, "470.57.02") // older than the stack's driver floor
		out, errOut, code := run(t, args(bad, env.BuildKit.Address(), filepath.Join(dir, "bad"), "--only", "*-L4")...)
		if code != cli.ExitFailed {
			t.Fatalf("publish of a failing variant exited %d, want %d:\n%s\n%s", code, cli.ExitFailed, out, lastLines(errOut, 40))
		}
		rep3, err := publish.ReadReport(filepath.Join(dir, "bad", publish.ReportJSON))
		must(t, err)
		if len(rep3.Results) != 1 || rep3.Results[0].Outcome != publish.Failed || !strings.Contains(rep3.Results[0].Error, "validate") || rep3.Results[0].Digest == "" {
			t.Fatalf("report: %+v", rep3.Results)
		}
		res := rep3.Results[0]
		if _, _, err := head(res.Variant.Tag); err == nil {
			t.Errorf("the failed variant's tag %s was written", res.Variant.Tag)
		}
		if _, _, err := head(failRepo + ":latest"); err == nil {
			t.Errorf("the failed variant's promoted tag was written")
		}
		// The image was pushed by digest, with its failing report.
		_, reports, err := images.Referrers(ctx, failRepo+"@"+res.Digest, images.ReportArtifactType, images.WithInsecure(true))
		if err != nil || len(reports) != 1 || reports[0].Annotations[images.AnnotationVerdict] != "fail" {
			t.Errorf("reports of the failed digest: %+v, %v", reports, err)
		}
		if !strings.Contains(errOut, res.Variant.Name) {
			t.Errorf("stderr does not name the failed variant:\n%s", lastLines(errOut, 10))
		}
		// Nothing of it is signed: no signature, no SBOM, no passing statement.
		if sg := res.Signing; sg == nil || sg.Status != publish.SignSkipped || !strings.Contains(sg.Reason, "validate") || len(sg.Signatures)+len(sg.Attestations)+len(sg.SBOMs) != 0 {
			t.Errorf("the failed variant's signing %+v, want skipped (it failed at validate), nothing signed", sg)
		}
		if out, errb, code := run(t, "verify", failRepo+"@"+res.Digest, "--key", signPub, "--require", "signature,sbom,validation", "--insecure-registry", env.Registry.Host); code != cli.ExitFailed ||
			!strings.Contains(errb, "signature") || !strings.Contains(errb, "sbom") || !strings.Contains(errb, "validation") {
			t.Errorf("gpuimg verify of the failed variant's digest: exit %d, want %d naming signature, sbom and validation\n%s%s", code, cli.ExitFailed, out, errb)
		}
	})

	t.Run("--provenance: BuildKit's provenance signed with the image", func(t *testing.T) {
		provRepo := env.Registry.Host + "/gpuimg/pub-prov"
		f := filepath.Join(dir, "prov.yaml")
		must(t, os.WriteFile(f, []byte(`repository: `+provRepo+`
tag: "{torch}-cu{cuda_short}-{gpu}"
matrix:
  cuda: ["12.2"]
  torch: ["2.3"]
  gpu: [h100]
validate: {driver: 535.104.05}
signing: {key: `+signKey+`, require: [signature, sbom, provenance, validation]}
`), 0o644))
		out, errOut, code := run(t, args(f, env.BuildKit.Address(), filepath.Join(dir, "prov"), "--provenance")...)
		if code != 0 {
			t.Fatalf("publish --provenance exited %d:\n%s\n%s", code, out, lastLines(errOut, 40))
		}
		rep4, err := publish.ReadReport(filepath.Join(dir, "prov", publish.ReportJSON))
		must(t, err)
		if len(rep4.Results) != 1 || rep4.Results[0].Outcome != publish.Published {
			t.Fatalf("report: %+v", rep4.Results)
		}
		if sg := rep4.Results[0].Signing; sg == nil || sg.Status != publish.SignSigned || sg.Count(publish.AttestProvenance) == 0 {
			t.Errorf("report.json's signing %+v, want signed with a provenance statement", sg)
		}
		tag := rep4.Results[0].Variant.Tag
		if out, errb, code := run(t, "verify", tag, "--key", signPub, "--require", "signature,sbom,provenance,validation"); code != 0 {
			t.Errorf("gpuimg verify %s --require signature,sbom,provenance,validation: exit %d\n%s%s", tag, code, out, errb)
		}
		// Again: unchanged, since the tag carries all of signing.require.
		out, errOut, code = run(t, args(f, "unix:///nonexistent/buildkitd.sock", filepath.Join(dir, "prov2"), "--provenance")...)
		if code != 0 {
			t.Fatalf("second publish --provenance exited %d:\n%s\n%s", code, out, lastLines(errOut, 40))
		}
		rep5, err := publish.ReadReport(filepath.Join(dir, "prov2", publish.ReportJSON))
		must(t, err)
		if len(rep5.Results) != 1 || rep5.Results[0].Outcome != publish.Unchanged {
			t.Errorf("second run: %+v, want unchanged", rep5.Results)
		}
	})

	// The pool scenario of issue 11 on the same environment (its registry,
	// index and buildkitd, plus two more buildkitds).
	t.Run("pool of 3 builders: kill one, rerun, a base moves, a variant fails", func(t *testing.T) {
		testPublishPool(t, env)
	})
}
