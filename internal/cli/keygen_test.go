package cli

import (
	"context"
	"crypto"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuimg/gpuimg/images/sign"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestKeygen checks gpuimg keygen's files (modes, the password that opens
// the private key, the public key that belongs to it) and its refusals:
// existing files without --force (left as they were), no password and no
// terminal.
func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "release")
	t.Setenv("COSIGN_PASSWORD", "correct horse")
	out, errb, code := run(t, "keygen", "--output-key-prefix", prefix, "-o", "json")
	if code != 0 {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errb)
	}
	var files struct {
		PrivateKey string `json:"private_key"`
		PublicKey  string `json:"public_key"`
	}
	if err := json.Unmarshal([]byte(out), &files); err != nil || files.PrivateKey != prefix+".key" || files.PublicKey != prefix+".pub" {
		t.Fatalf("keygen -o json = %s (%v)", out, err)
	}
	for f, mode := range map[string]os.FileMode{prefix + ".key": 0o600, prefix + ".pub": 0o644} {
		st, err := os.Stat(f)
		must(t, err)
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, want %v", f, st.Mode().Perm(), mode)
		}
	}
	keyPEM, err := os.ReadFile(prefix + ".key")
	must(t, err)
	if !strings.HasPrefix(string(keyPEM), "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----") {
		t.Errorf("private key PEM type: %q", strings.SplitN(string(keyPEM), "\n", 2)[0])
	}
	if _, err := sign.ParsePrivateKey(keyPEM, func() ([]byte, error) { return []byte("wrong"), nil }); err == nil {
		t.Error("the private key opens with a wrong password")
	}
	sv, err := sign.ParsePrivateKey(keyPEM, func() ([]byte, error) { return []byte("correct horse"), nil })
	must(t, err)
	pub, err := sign.LoadPublicKey(prefix + ".pub")
	must(t, err)
	if own, err := sv.PublicKey(); err != nil || !pub.(interface{ Equal(x crypto.PublicKey) bool }).Equal(own) {
		t.Errorf("the public key file is not the private key's (%v)", err)
	}

	for _, tc := range []struct {
		name string
		env  *string // COSIGN_PASSWORD; nil: unset
		args []string
		code int
		want string
	}{
		{"exists", new("x"), []string{"keygen", "--output-key-prefix", prefix}, ExitInvalid, "release.key: key file exists; pass --force"},
		{"no password, no terminal", nil, []string{"keygen", "--output-key-prefix", filepath.Join(dir, "other")}, ExitInvalid, "set COSIGN_PASSWORD"},
		{"force", new(""), []string{"keygen", "--output-key-prefix", prefix, "--force"}, ExitOK, "public key:  " + prefix + ".pub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env == nil {
				os.Unsetenv("COSIGN_PASSWORD") // t.Setenv above restores it
			} else {
				t.Setenv("COSIGN_PASSWORD", *tc.env)
			}
			before, _ := os.ReadFile(prefix + ".key")
			out, errb, code := run(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errb, tc.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, tc.code, tc.want, out, errb)
			}
			after, _ := os.ReadFile(prefix + ".key")
			if changed := string(before) != string(after); changed != (tc.code == ExitOK) {
				t.Errorf("key file changed: %v, want %v", changed, tc.code == ExitOK)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "other.key")); err == nil {
		t.Error("a refused keygen wrote other.key")
	}
}

// TestKeygenCosignInterop checks a gpuimg keygen key pair with the pinned
// cosign (tools/go.mod) both ways: cosign derives the public key from the
// encrypted private key, cosign verifies what gpuimg sign signed with
// it, and gpuimg verify accepts what cosign sign signed with it.
func TestKeygenCosignInterop(t *testing.T) {
	testenv.Require(t, "runs the pinned cosign (built into bin/ once)", testenv.Slow)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cosign, err := testenv.Cosign(ctx)
	must(t, err)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	const password = "correct horse"
	t.Setenv("COSIGN_PASSWORD", password)
	if out, errb, code := run(t, "keygen", "--output-key-prefix", filepath.Join(dir, "cosign")); code != 0 {
		t.Fatalf("gpuimg keygen: exit %d\n%s%s", code, out, errb)
	}
	key, pub := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(home, 0o755))
	cosignRun := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "COSIGN_PASSWORD=" + password, "PATH=/usr/bin:/bin", "TUF_ROOT=" + filepath.Join(home, "tuf")}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// cosign opens the encrypted private key.
	derived, err := cosignRun("public-key", "--key", key)
	want, _ := os.ReadFile(pub)
	if err != nil || strings.TrimSpace(derived) != strings.TrimSpace(string(want)) {
		t.Fatalf("cosign public-key --key (gpuimg's key): %v\n%s\nwant\n%s", err, derived, want)
	}

	push := func(ref string) string {
		img, err := random.Image(256, 1)
		must(t, err)
		r, err := name.ParseReference(ref, name.Insecure)
		must(t, err)
		must(t, remote.Write(r, img, remote.WithContext(ctx)))
		d, _ := img.Digest()
		return r.Context().Digest(d.String()).String()
	}

	// gpuimg sign → cosign verify.
	signed := push(host + "/gpu/by-gpuimg:1")
	if out, errb, code := run(t, "sign", signed, "--key", key); code != 0 {
		t.Fatalf("gpuimg sign with gpuimg's key: exit %d\n%s%s", code, out, errb)
	}
	if out, err := cosignRun("verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", signed); err != nil {
		t.Errorf("cosign verify rejects gpuimg's signature with gpuimg's key: %v\n%s", err, out)
	}

	// cosign sign (offline: no transparency log, an empty trusted root) → gpuimg verify.
	sc, tr := filepath.Join(dir, "signing-config.json"), filepath.Join(dir, "trusted-root.json")
	for _, args := range [][]string{{"signing-config", "create", "--out", sc}, {"trusted-root", "create", "--out", tr}} {
		if out, err := cosignRun(args...); err != nil {
			t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	byCosign := push(host + "/gpu/by-cosign:1")
	if out, err := cosignRun("sign", "--key", key, "--signing-config", sc, "--trusted-root", tr, "--allow-http-registry", "-y", byCosign); err != nil {
		t.Fatalf("cosign sign with gpuimg's key: %v\n%s", err, out)
	}
	if out, errb, code := run(t, "verify", byCosign, "--key", pub); code != 0 {
		t.Errorf("gpuimg verify rejects cosign's signature with gpuimg's key: exit %d\n%s%s", code, out, errb)
	}
	// And the key pair is no accept-anything: another key fails.
	if out, errb, code := run(t, "keygen", "--output-key-prefix", filepath.Join(dir, "other")); code != 0 {
		t.Fatalf("gpuimg keygen other: exit %d\n%s%s", code, out, errb)
	}
	if out, err := cosignRun("verify", "--key", filepath.Join(dir, "other.pub"), "--insecure-ignore-tlog", "--allow-http-registry", signed); err == nil {
		t.Errorf("cosign verify accepts another key\n%s", out)
	}
}
