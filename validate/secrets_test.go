package validate

import (
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuimg/gpuimg/matrix"
)

// fake makes a deterministic random string over alphabet: realistic
// shape, no real credential.
func fake(seed uint64, alphabet string, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0234567"
	b64   = alnum + "+/"
)

func randomB64(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 9))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// pemKey is a PEM private key body of the right shape (random bytes).
func pemKey(kind string) string {
	body := randomB64(3, 600)
	var lines []string
	for len(body) > 64 {
		lines = append(lines, body[:64])
		body = body[64:]
	}
	lines = append(lines, body)
	return "-----BEGIN " + kind + "-----\n" + strings.Join(lines, "\n") + "\n-----END " + kind + "-----\n"
}

// secretCase is one corpus sample: a file (path set) or free text (an
// environment value, a label, a history line). secret is the part that
// must never appear in any output.
type secretCase struct {
	name    string
	path    string
	content string
	secret  string
	want    bool
}

func secretCorpus() []secretCase {
	ghp := "ghp_" + fake(1, alnum, 36)
	pat := "github_pat_" + fake(2, alnum, 22) + "_" + fake(3, alnum, 59)
	glpat := "glpat-" + fake(4, alnum+"_-", 20)
	hf := "hf_" + fake(5, alnum, 34)
	pypi := "pypi-AgEIcHlwaS5vcmc" + fake(6, alnum+"_-", 120)
	npm := "npm_" + fake(7, alnum, 36)
	azKey := randomB64(8, 64)
	akia := "AKIA" + fake(9, upper, 16)
	saKey := strings.ReplaceAll(pemKey("PRIVATE KEY"), "\n", `\n`)
	sa, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "p", "private_key_id": fake(10, "0123456789abcdef", 40), "private_key": strings.ReplaceAll(saKey, `\n`, "\n"), "client_email": "ci@p.iam.gserviceaccount.com"})
	dockerAuth := base64.StdEncoding.EncodeToString([]byte("ci:" + fake(11, alnum, 24)))
	awsSecret := fake(12, b64, 40)
	return []secretCase{
		// True positives: each vendor's documented format.
		{"AWS documented example key", "", "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE", true},
		{"AWS access key in a script", "", "aws configure set aws_access_key_id " + akia, akia[4:], true},
		{"AWS STS key", "", "ASIA" + fake(13, upper, 16), fake(13, upper, 16), true},
		{"AWS credentials file", "root/.aws/credentials", "[default]\naws_access_key_id = " + akia + "\naws_secret_access_key = " + awsSecret + "\n", awsSecret, true},
		{"GitHub classic token", "", "GITHUB_TOKEN=" + ghp, ghp[4:], true},
		{"GitHub fine-grained token", "", "git clone https://x:" + pat + "@github.com/o/r", pat[11:], true},
		{"GitHub token alone", "", pat, pat[11:], true},
		{"GitLab token", "", "PRIVATE-TOKEN: " + glpat, glpat[6:], true},
		{"Hugging Face token", "", "huggingface-cli login --token " + hf, hf[3:], true},
		{"Hugging Face token file", "root/.cache/huggingface/.env", "HF_TOKEN=" + hf + "\n", hf[3:], true},
		{"PyPI token", "", "twine upload -u __token__ -p " + pypi, pypi[5:], true},
		{"PyPI token in .pypirc", "root/.pypirc", "[pypi]\nusername = __token__\npassword = " + pypi + "\n", pypi[5:], true},
		{"npm token", "root/.npmrc", "//registry.npmjs.org/:_authToken=" + npm + "\n", npm[4:], true},
		{"npm legacy token", "root/.npmrc", "//registry.npmjs.org/:_authToken=" + fake(14, "0123456789abcdef", 8) + "-1234-4321-8888-" + fake(15, "0123456789abcdef", 12) + "\n", fake(15, "0123456789abcdef", 12), true},
		{"Azure connection string", "", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + azKey + ";EndpointSuffix=core.windows.net", azKey, true},
		{"RSA private key file", "app/server.key", pemKey("RSA PRIVATE KEY"), randomB64(3, 600)[:64], true},
		{"OpenSSH private key", "root/.ssh/id_ed25519", pemKey("OPENSSH PRIVATE KEY"), randomB64(3, 600)[:64], true},
		{"PKCS#8 key in text", "", "KEY=" + pemKey("PRIVATE KEY"), randomB64(3, 600)[:64], true},
		{"encrypted private key", "etc/ssl/private/x.pem", pemKey("ENCRYPTED PRIVATE KEY"), randomB64(3, 600)[:64], true},
		{"GCP service-account JSON", "app/sa-key.json", string(sa), randomB64(3, 600)[:64], true},
		{".netrc password", "root/.netrc", "machine pypi.example.com\n  login ci\n  password " + fake(16, alnum, 20) + "\n", fake(16, alnum, 20), true},
		{"pip.conf with credentials", "etc/pip.conf", "[global]\nindex-url = https://ci:" + fake(17, alnum, 18) + "@pypi.example.com/simple\n", fake(17, alnum, 18), true},
		{"docker config.json auths", "root/.docker/config.json", `{"auths":{"ghcr.io":{"auth":"` + dockerAuth + `"}}}`, dockerAuth, true},
		{"URL with a password", "", "pip install --extra-index-url https://ci:" + fake(18, alnum, 16) + "@nexus.example.com/simple torch", fake(18, alnum, 16), true},

		// False positives: look alike, hold no secret.
		{"sha256 digest", "", "sha256:" + fake(20, "0123456789abcdef", 64), "", false},
		{"UUID", "", "NVIDIA_VISIBLE_DEVICES=GPU-" + fake(21, "0123456789abcdef", 8) + "-1234-5678-9abc-" + fake(22, "0123456789abcdef", 12), "", false},
		{"base64 of random data", "", randomB64(23, 64), "", false},
		{"long base64 blob", "", randomB64(24, 300), "", false},
		{"git commit hash", "", "git checkout " + fake(25, "0123456789abcdef", 40), "", false},
		{"SSH public key", "root/.ssh/authorized_keys", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake(26, alnum, 43) + " ci@example.com\n", "", false},
		{"PEM public key", "etc/ssl/pub.pem", pemKey("PUBLIC KEY"), "", false},
		{"certificate", "etc/ssl/certs/ca.pem", pemKey("CERTIFICATE"), "", false},
		{"PEM header in docs", "", "Paste the key:\n-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----", "", false},
		{"password placeholder in docs", "", "password: <your-password>", "", false},
		{".pypirc template", "root/.pypirc", "[pypi]\nusername = __token__\npassword = <your PyPI token>\n", "", false},
		{".pypirc variable", "root/.pypirc", "[pypi]\npassword = ${PYPI_TOKEN}\n", "", false},
		{".netrc placeholder", "root/.netrc", "machine example.com login me password YOUR_PASSWORD\n", "", false},
		{".npmrc variable", "root/.npmrc", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n", "", false},
		{"pip.conf without credentials", "etc/pip.conf", "[global]\nindex-url = https://pypi.org/simple\nextra-index-url = https://download.pytorch.org/whl/cu121\n", "", false},
		{"docker config.json with a helper", "root/.docker/config.json", `{"auths":{"ghcr.io":{}},"credsStore":"desktop"}`, "", false},
		{"GCP JSON placeholder", "app/service_account.json", `{"type": "service_account", "private_key": "your-private-key", "client_email": "your-client-email"}`, "", false},
		{"Azure emulator connection string", "", "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + azuriteKey + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;", "", false},
		{"URL with a variable password", "", "pip install --index-url https://ci:${PIP_PASSWORD}@pypi.example.com/simple torch", "", false},
		{"URL with a user only", "", "pip install git+https://git@github.com/org/repo.git@v1.2", "", false},
		{"URL with a port", "", "DATABASE_URL=postgres://db.internal:5432/app", "", false},
		{"identifier that starts like a token", "", "from huggingface_hub import hf_hub_download; hf_hub_download(repo_id='x')", "", false},
		{"short ghp_ prefix", "", "echo ghp_abc", "", false},
		{"AKIA inside a longer word", "", "XAKIAIOSFODNN7EXAMPLEX1", "", false},
		{"npm package name", "", "npm_config_cache=/tmp/npm", "", false},
		{"pypi- in a package name", "", "pip install pypi-simple==1.0", "", false},
		{"CUDA requirement", "", "cuda>=12.2 brand=tesla,driver>=470,driver<471", "", false},
	}
}

// TestSecretCorpus runs the detectors over realistic true and false
// positives: every true positive is found, no false positive is, and no
// output shows a secret.
func TestSecretCorpus(t *testing.T) {
	var tp, fn, fp, tn int
	for _, c := range secretCorpus() {
		var ms []secretMatch
		if c.path != "" {
			ms = secretsInFile(c.path, []byte(c.content))
		} else {
			ms = secretsInText(c.content)
		}
		got := len(ms) > 0
		switch {
		case got && c.want:
			tp++
		case got:
			fp++
			t.Errorf("false positive %q: %s", c.name, joinMatches(ms))
		case c.want:
			fn++
			t.Errorf("missed %q", c.name)
		default:
			tn++
		}
		out := joinMatches(ms)
		if c.path == "" { // free text is shown redacted (history lines)
			out += redactText(c.content)
		}
		if c.secret != "" && strings.Contains(out, c.secret) {
			t.Errorf("%q: output shows the secret: %s", c.name, out)
		}
	}
	t.Logf("secret corpus: %d true positives found, %d missed; %d false positives, %d true negatives", tp, fn, fp, tn)
	if fp != 0 || fn != 0 {
		t.Errorf("want 0 false positives and 0 missed, got %d and %d", fp, fn)
	}
}

// TestSecretInDeletedLayer: a credentials file added in one layer and
// deleted by a whiteout in the next is still shipped; the check fails,
// names the layer and says that deleting it does not remove it. Secrets
// in history build arguments and labels fail too, and nothing in the
// report shows a secret.
func TestSecretInDeletedLayer(t *testing.T) {
	pass := fake(30, alnum, 20)
	hf := "hf_" + fake(31, alnum, 34)
	argPass := fake(32, alnum, 12)
	img := image(t,
		layer(t, file{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}),
		layer(t, file{"root/.netrc", "machine pypi.example.com login ci password " + pass + "\n"}),
		layer(t, file{"root/.wh..netrc", ""}),
	)
	cfg, err := img.ConfigFile()
	must(t, err)
	cfg = cfg.DeepCopy()
	cfg.History = []v1.History{
		{CreatedBy: "ADD rootfs.tar /"},
		{CreatedBy: "RUN |2 PIP_PASSWORD=" + argPass + " HTTP_PROXY= /bin/sh -c pip install torch"},
	}
	cfg.Config.Labels = map[string]string{"org.example.token": hf}
	img, err = mutate.ConfigFile(img, cfg)
	must(t, err)
	r, err := Inspect(t.Context(), img, Options{DB: db(t)})
	must(t, err)
	var msg string
	for _, c := range r.Checks {
		if c.Name == "secrets" {
			if c.Status != matrix.Fail {
				t.Errorf("secrets = %s, want fail", c.Status)
			}
			msg = c.Message
		}
	}
	diffIDs := cfg.RootFS.DiffIDs
	for _, want := range []string{
		"a password (… 20 chars) in /root/.netrc (layer 1, " + shortDigest(diffIDs[1].String()) + "): a later layer deletes or replaces it, which does not remove it",
		"the build argument PIP_PASSWORD (… 12 chars) in the image history, step 1 (RUN |2 PIP_PASSWORD=[… 12 chars] HTTP_PROXY= /bin/sh -c pip install torch)",
		"a Hugging Face token (hf_… 37 chars) in the label org.example.token",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("secrets message lacks %q:\n%s", want, msg)
		}
	}
	b, err := json.Marshal(r)
	must(t, err)
	for _, s := range []string{pass, hf[3:], argPass} {
		if strings.Contains(string(b), s) {
			t.Errorf("the report shows the secret %q", s)
		}
	}
}
