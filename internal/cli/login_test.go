package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuimg/gpuimg/internal/testenv"
)

// runStdin is run with stdin.
func runStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb strings.Builder
	root := NewRoot()
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.ExecuteContext(t.Context()); err != nil {
		printError(&errb, err)
		return out.String(), errb.String(), exitCode(err)
	}
	return out.String(), errb.String(), ExitOK
}

// lockedRegistry starts the distribution registry (plain HTTP on
// loopback) with htpasswd auth for user ci, password s3cret, and pushes
// a small image to HOST/ml/torch:1; it returns HOST.
func lockedRegistry(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "starts the distribution registry with htpasswd auth", testenv.Slow)
	ctx := t.Context()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	must(t, err)
	dir := t.TempDir()
	htpasswd := filepath.Join(dir, "htpasswd")
	must(t, os.WriteFile(htpasswd, []byte("ci:"+string(hash)+"\n"), 0o600))
	tools, err := testenv.BuildTools(ctx)
	must(t, err)
	reg, err := testenv.StartRegistry(ctx, tools.Registry, filepath.Join(dir, "reg"), testenv.RegistryOptions{Htpasswd: htpasswd})
	must(t, err)
	t.Cleanup(reg.Stop)
	img, err := random.Image(1024, 1)
	must(t, err)
	r, err := name.ParseReference(reg.Host+"/ml/torch:1", name.Insecure)
	must(t, err)
	must(t, remote.Write(r, img, remote.WithContext(ctx), remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"})))
	return reg.Host
}

// TestLoginLogout logs in to a registry with htpasswd auth through
// config.json and through a credential helper (a real program on PATH),
// and checks that images ls and copy then work, that a wrong password
// stores nothing, and that logout takes the access away again.
func TestLoginLogout(t *testing.T) {
	host := lockedRegistry(t)
	repo := host + "/ml/torch"
	lsWorks := func(t *testing.T) bool {
		t.Helper()
		out, errb, code := run(t, "images", "ls", repo)
		if code != ExitOK && !strings.Contains(errb, "docker login "+host) {
			t.Errorf("images ls refused without naming docker login %s:\n%s", host, errb)
		}
		return code == ExitOK && strings.Contains(out, "1")
	}

	t.Run("config.json", func(t *testing.T) {
		cfgDir := t.TempDir()
		t.Setenv("DOCKER_CONFIG", cfgDir)
		if lsWorks(t) {
			t.Fatal("images ls works before login")
		}
		if out, errb, code := runStdin(t, "wrong\n", "login", host, "-u", "ci", "--password-stdin"); code != ExitInvalid || !strings.Contains(errb, "refused the user name and password") {
			t.Errorf("login with a wrong password: exit %d\n%s%s", code, out, errb)
		}
		if _, err := os.Stat(filepath.Join(cfgDir, "config.json")); err == nil {
			t.Error("a refused login wrote config.json")
		}
		out, errb, code := runStdin(t, "s3cret\n", "login", host, "-u", "ci", "--password-stdin")
		if code != ExitOK || strings.Contains(out+errb, "s3cret") {
			t.Fatalf("login: exit %d (and the password must not be echoed)\n%s%s", code, out, errb)
		}
		var cf struct {
			Auths map[string]struct{ Auth string } `json:"auths"`
		}
		b, err := os.ReadFile(filepath.Join(cfgDir, "config.json"))
		must(t, err)
		must(t, json.Unmarshal(b, &cf))
		if cf.Auths[host].Auth == "" {
			t.Errorf("config.json has no auths entry for %s:\n%s", host, b)
		}
		if !lsWorks(t) {
			t.Error("images ls fails after login")
		}
		if out, errb, code := run(t, "images", "copy", repo+":1", repo+":copied"); code != ExitOK {
			t.Errorf("images copy after login: exit %d\n%s%s", code, out, errb)
		}
		if out, errb, code := run(t, "logout", host, "-o", "json"); code != ExitOK || !strings.Contains(out, `"removed": true`) {
			t.Errorf("logout: exit %d\n%s%s", code, out, errb)
		}
		if lsWorks(t) {
			t.Error("images ls works after logout")
		}
		if out, _, code := run(t, "logout", host); code != ExitOK || !strings.Contains(out, "not logged in") {
			t.Errorf("second logout: exit %d %q", code, out)
		}
	})

	t.Run("credential helper", func(t *testing.T) {
		cfgDir, binDir, store := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "store.json")
		// docker-credential-test: the credential helper protocol (store,
		// get, erase on stdin) over one file.
		helper := "#!/bin/sh\nset -e\ncase \"$1\" in\n" +
			"store) cat > " + store + " ;;\n" +
			"get) cat >/dev/null; if [ -f " + store + " ]; then cat " + store + "; else echo 'credentials not found in native keychain'; exit 1; fi ;;\n" +
			"erase) rm -f " + store + " ;;\n" +
			"list) echo '{}' ;;\nesac\n"
		must(t, os.WriteFile(filepath.Join(binDir, "docker-credential-test"), []byte(helper), 0o755))
		t.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		t.Setenv("DOCKER_CONFIG", cfgDir)
		must(t, os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"credHelpers":{"`+host+`":"test"}}`), 0o600))
		if out, errb, code := runStdin(t, "s3cret", "login", host, "-u", "ci", "--password-stdin"); code != ExitOK {
			t.Fatalf("login: exit %d\n%s%s", code, out, errb)
		}
		b, err := os.ReadFile(store)
		if err != nil || !strings.Contains(string(b), `"Secret":"s3cret"`) {
			t.Fatalf("the credential helper holds %q (%v)", b, err)
		}
		if cfg, _ := os.ReadFile(filepath.Join(cfgDir, "config.json")); strings.Contains(string(cfg), "\"auth\"") || strings.Contains(string(cfg), "s3cret") {
			t.Errorf("config.json holds the credentials though a helper is named:\n%s", cfg)
		}
		if !lsWorks(t) {
			t.Error("images ls fails after login through the helper")
		}
		if _, errb, code := run(t, "logout", host); code != ExitOK {
			t.Errorf("logout: exit %d %s", code, errb)
		}
		if _, err := os.Stat(store); err == nil {
			t.Error("logout left the helper's credentials")
		}
	})
}

// TestLoginRefusals checks login's input errors, which need no registry.
func TestLoginRefusals(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"no user", "x", []string{"login", "127.0.0.1:1", "--password-stdin"}, "login: no user name; pass -u USER"},
		{"empty stdin", "", []string{"login", "127.0.0.1:1", "-u", "ci", "--password-stdin"}, "stdin held no password"},
		{"both passwords", "x", []string{"login", "127.0.0.1:1", "-u", "ci", "-p", "x", "--password-stdin"}, "--password and --password-stdin both given"},
		{"no terminal", "", []string{"login", "127.0.0.1:1", "-u", "ci"}, "stdin is not a terminal; pass --password-stdin"},
		{"a repository", "x", []string{"login", "127.0.0.1:1/ml/torch", "-u", "ci", "--password-stdin"}, "is not a registry host"},
		{"unreachable", "x", []string{"login", "127.0.0.1:1", "-u", "ci", "--password-stdin", "--retries", "0"}, "login 127.0.0.1:1: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errb, code := runStdin(t, tc.stdin, tc.args...)
			if code != ExitInvalid || !strings.Contains(errb, tc.want) {
				t.Errorf("exit %d, want 2 with %q\n%s%s", code, tc.want, out, errb)
			}
		})
	}
}

// TestValidateNamesLogin checks that validate of a registry answering 401
// names how to log in, as copy does (one explanation, images.Explain).
func TestValidateNamesLogin(t *testing.T) {
	host := lockedRegistry(t)
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	for _, args := range [][]string{
		{"validate", host + "/ml/torch:1"},
		{"images", "copy", host + "/ml/torch:1", host + "/ml/torch:2"},
	} {
		out, errb, code := run(t, args...)
		if code != ExitInvalid || !strings.Contains(errb, "refused the credentials") || !strings.Contains(errb, "`docker login "+host+"`") {
			t.Errorf("%s: exit %d, want 2 naming docker login %s\n%s%s", args[0], code, host, out, errb)
		}
	}
}
