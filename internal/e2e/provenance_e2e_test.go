package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/cli"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuildProvenanceSigned builds one stack with --provenance and a
// --secret on testenv's buildkitd, then checks what BuildKit recorded and
// what gpuimg sign made of it: the pushed index holds an attestation
// manifest with SLSA v1 provenance (mode=max: the build's parameters;
// runDetails.builder.id naming gpuimg and the daemon) in which the
// secret's value appears nowhere; gpuimg sign re-signs it, so that real
// cosign verify-attestation --type slsaprovenance1 and gpuimg verify
// --require signature,provenance accept the tag, and a wrong key fails;
// gpuimg images copy to another repository carries it all along.
func TestBuildProvenanceSigned(t *testing.T) {
	testenv.Require(t, "builds with buildkitd, which runs build steps with runc", testenv.Slow, testenv.Root)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Minute)
	defer cancel()
	cosign, err := testenv.Cosign(ctx)
	must(t, err)
	env := sharedEnv(t, "gp-")
	_, err = env.PushBase(ctx, "nvidia/cuda:12.2.2-base-ubuntu22.04")
	must(t, err)
	must(t, env.TorchWheels("2.3.1", "0.18.1", "2.3.1", "12.1"))

	const secret = "hf_S3cretProvenanceToken0123456789abcd"
	hf := filepath.Join(t.TempDir(), "hf_token")
	must(t, os.WriteFile(hf, []byte(secret), 0o600))
	ref := env.Registry.Host + "/gpuimg/prov:cu122"
	out, errOut, code := run(t, "build", "--cuda", "12.2", "--torch", "2.3", "--torch-compile=false", "--no-checks",
		"--matrix-file", env.MatrixFile, "--registry-mirror", env.Mirror(), "--pip-index-url", env.Index.URL,
		"--builder", env.BuildKit.Address(), "--secret", "id=hf,src="+hf, "--provenance",
		"-t", ref, "--push", "--progress", "plain", "-o", "json")
	if code != 0 {
		t.Fatalf("gpuimg build --provenance exited %d:\n%s", code, lastLines(errOut, 40))
	}
	if strings.Contains(out+errOut, secret) {
		t.Error("the secret is in gpuimg build's output")
	}

	// BuildKit's provenance, as pushed: unsigned, in the index.
	r, err := name.ParseReference(ref, name.Insecure)
	must(t, err)
	idx, err := remote.Index(r, remote.WithContext(ctx))
	must(t, err)
	im, err := idx.IndexManifest()
	must(t, err)
	var stmts [][]byte
	for _, d := range im.Manifests {
		if d.Annotations["vnd.docker.reference.type"] != "attestation-manifest" {
			continue
		}
		att, err := idx.Image(d.Digest)
		must(t, err)
		ls, err := att.Layers()
		must(t, err)
		for _, l := range ls {
			rc, err := l.Compressed()
			must(t, err)
			b, err := io.ReadAll(rc)
			rc.Close()
			must(t, err)
			stmts = append(stmts, b)
		}
	}
	var found bool
	wantID := builder.DefaultBuilderID(env.BuildKit.Address())
	for _, b := range stmts {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("BuildKit's attestation holds the secret's value:\n%.2000s", b)
		}
		var st struct {
			PredicateType string
			Predicate     struct {
				BuildDefinition struct {
					ExternalParameters map[string]any
				}
				RunDetails struct{ Builder struct{ ID string } }
			}
		}
		if json.Unmarshal(b, &st) != nil || st.PredicateType != "https://slsa.dev/provenance/v1" {
			continue
		}
		found = true
		if st.Predicate.RunDetails.Builder.ID != wantID {
			t.Errorf("builder id %q, want %q", st.Predicate.RunDetails.Builder.ID, wantID)
		}
		if st.Predicate.BuildDefinition.ExternalParameters["request"] == nil {
			t.Errorf("no buildDefinition.externalParameters.request (mode=max): %.1000s", b)
		}
	}
	if !found {
		t.Fatalf("no SLSA v1 provenance in %s's index (%d attestation layers)", ref, len(stmts))
	}

	// Keys from cosign itself; gpuimg signs, cosign and gpuimg verify.
	dir := t.TempDir()
	cosignRun := cosignKeys(ctx, t, cosign, dir, "pw")
	t.Setenv("COSIGN_PASSWORD", "pw")
	goodPub, otherPub := filepath.Join(dir, "good", "cosign.pub"), filepath.Join(dir, "other", "cosign.pub")
	if o, e, code := run(t, "sign", ref, "--key", filepath.Join(dir, "good", "cosign.key")); code != 0 || !strings.Contains(o, "attested BuildKit's provenance") {
		t.Fatalf("gpuimg sign: exit %d\n%s%s", code, o, e)
	}
	if o, err := cosignRun(dir, "verify-attestation", "--key", goodPub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", "slsaprovenance1", ref); err != nil {
		t.Errorf("cosign verify-attestation --type slsaprovenance1 rejects gpuimg's provenance: %v\n%s", err, lastLines(o, 20))
	} else if strings.Contains(o, secret) {
		t.Error("the signed provenance holds the secret")
	}
	if o, e, code := run(t, "verify", ref, "--key", goodPub, "--require", "signature,provenance"); code != 0 {
		t.Errorf("gpuimg verify --require signature,provenance: exit %d\n%s%s", code, o, e)
	}
	if _, err := cosignRun(dir, "verify-attestation", "--key", otherPub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", "slsaprovenance1", ref); err == nil {
		t.Error("cosign verify-attestation accepts the provenance with another key")
	}
	if o, e, code := run(t, "verify", ref, "--key", otherPub, "--require", "provenance"); code != cli.ExitFailed {
		t.Errorf("gpuimg verify with another key: exit %d, want %d\n%s%s", code, cli.ExitFailed, o, e)
	}

	// images copy carries the signatures and attestations along, on the
	// distribution registry (no Referrers API: the tag fallback), and
	// cosign and gpuimg accept the copy with the same key.
	mirror := env.Registry.Host + "/mirror/prov:cu122"
	if o, e, code := run(t, "images", "copy", ref, mirror); code != 0 || !strings.Contains(o, "referrers") {
		t.Fatalf("gpuimg images copy: exit %d\n%s%s", code, o, e)
	}
	if o, err := cosignRun(dir, "verify", "--key", goodPub, "--insecure-ignore-tlog", "--allow-http-registry", mirror); err != nil {
		t.Errorf("cosign verify rejects the copy: %v\n%s", err, lastLines(o, 20))
	}
	if o, err := cosignRun(dir, "verify-attestation", "--key", goodPub, "--insecure-ignore-tlog", "--allow-http-registry", "--type", "slsaprovenance1", mirror); err != nil {
		t.Errorf("cosign verify-attestation rejects the copy's provenance: %v\n%s", err, lastLines(o, 20))
	}
	if o, e, code := run(t, "verify", mirror, "--key", goodPub, "--require", "signature,provenance"); code != 0 {
		t.Errorf("gpuimg verify of the copy: exit %d\n%s%s", code, o, e)
	}
}
