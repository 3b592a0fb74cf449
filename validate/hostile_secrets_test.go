package validate

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/gpuimg/gpuimg/matrix"
)

// secretImageCase is an image holding (or not) a secret outside the
// files named like credentials.
type secretImageCase struct {
	name   string
	layers [][]ent
	lim    Limits
	secret string // must fail the check, and never be shown; "" passes
	status matrix.Status
	msgHas string
}

func secretImageCases() []secretImageCase {
	ghp := "ghp_" + fake(101, alnum, 36)
	kubeTok := "eyJhbGciOiJSUzI1NiIs" + fake(102, alnum, 40)
	netrcPass := fake(103, alnum, 20)
	akia := "AKIA" + fake(104, upper, 16)
	openai := "sk-proj-" + fake(105, alnum, 58) + "T3BlbkFJ" + fake(106, alnum, 58)
	slack := "xoxb-" + fake(107, "0123456789", 12) + "-" + fake(108, alnum, 24)
	stripe := "sk_live_" + fake(109, alnum, 24)
	pad := strings.Repeat("# comment line that holds nothing at all\n", (2<<20)/41)
	return []secretImageCase{
		{name: "GitHub token in gh's hosts.yml", layers: [][]ent{{reg("root/.config/gh/hosts.yml", "github.com:\n    oauth_token: "+ghp+"\n    user: ci\n")}}, secret: ghp[4:], status: matrix.Fail, msgHas: "a GitHub token (ghp_… 40 chars) in /root/.config/gh/hosts.yml"},
		{name: "GitHub token in application source", layers: [][]ent{{reg("app/deploy.py", "import os\nTOKEN = \""+ghp+"\"\n")}}, secret: ghp[4:], status: matrix.Fail, msgHas: "in /app/deploy.py"},
		{name: "kubeconfig token", layers: [][]ent{{reg("root/.kube/config", "apiVersion: v1\nusers:\n- name: ci\n  user:\n    token: "+kubeTok+"\n")}}, secret: kubeTok[20:], status: matrix.Fail, msgHas: "in /root/.kube/config"},
		{name: ".netrc reached through a hard link", layers: [][]ent{{reg("opt/data/n", "machine pypi.example.com login ci password "+netrcPass+"\n"), hard("root/.netrc", "opt/data/n")}}, secret: netrcPass, status: matrix.Fail, msgHas: "a .netrc password (… 20 chars) in /opt/data/n"},
		{name: "credential after the first MiB of a .env", layers: [][]ent{{reg("app/.env", pad+"AWS_ACCESS_KEY_ID="+akia+"\n")}}, secret: akia[4:], status: matrix.Fail, msgHas: "an AWS access key (AKIA… 20 chars) in /app/.env"},
		{name: "token across a chunk boundary", layers: [][]ent{{reg("app/conf.txt", strings.Repeat("x", scanChunk-maxRuleLen-scanBack-10)+"\n"+openai+"\n")}}, secret: openai[20:], status: matrix.Fail, msgHas: "an OpenAI key"},
		{name: "Slack and Stripe in a script", layers: [][]ent{{reg("usr/local/bin/notify.sh", "curl -H 'Authorization: Bearer "+slack+"'\nSTRIPE="+stripe+"\n")}}, secret: slack[5:], status: matrix.Fail, msgHas: "a Slack token"},
		{name: "a token in a binary is skipped", layers: [][]ent{{reg("usr/lib/libx.so", "\x7fELF\x02\x01\x01\x00"+ghp)}}, status: matrix.Pass},
		{name: "type hints that look like a kubeconfig", layers: [][]ent{{reg("usr/lib/python3/dist-packages/t.py", "class A:\n    token: PreTrainedTokenizerFast\n    token: \"${HF_TOKEN}\"\n")}}, status: matrix.Pass},
		{name: "credentials of library documentation", layers: [][]ent{{reg("usr/lib/python3/dist-packages/sqlalchemy/engine/create.py", `"""engine = create_engine("postgresql://scott:tiger@localhost/test")
broker = "amqp://guest:guest@localhost//"
token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
client = WebClient(token="xoxb-111-222-xxxxx")
netrc = f'machine {hostname}{path} login {self.username} password {self.password}'
stripe.api_key = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"
"""
`)}}, status: matrix.Pass},
		{name: "a real JWT in a script", layers: [][]ent{{reg("app/call.sh", "curl -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJjaSIsImV4cCI6MTg5MzQ1NjAwMH0."+fake(112, alnum, 43)+"'\n")}}, secret: fake(112, alnum, 43), status: matrix.Fail, msgHas: "a JSON Web Token (eyJ…"},
		{name: "examples in documentation and tests", layers: [][]ent{{
			reg("usr/share/doc/nodejs/api/url.md", "new URL('https://abc:xyz@example.com')\nhttps://ci:"+fake(113, alnum, 16)+"@mirror.internal/simple\n"),
			reg("usr/lib/python3/dist-packages/pkg/tests/server.py", pemKey("RSA PRIVATE KEY")),
			reg("app/docs/setup.md", "pip install --index-url https://ci:"+fake(114, alnum, 16)+"@pypi.example.com/simple\n"),
		}}, status: matrix.Pass},
		{name: "a vendor token in a test is still found", layers: [][]ent{{reg("app/tests/test_api.py", "TOKEN = '"+ghp+"'\n")}}, secret: ghp[4:], status: matrix.Fail, msgHas: "in /app/tests/test_api.py"},
		{name: "a file past the per-file bound is a warning", layers: [][]ent{{reg("data/big.csv", strings.Repeat("a,b,c\n", 200_000))}}, lim: Limits{MaxSecretScanFileBytes: 64 << 10}, status: matrix.Warn, msgHas: "1 text files were not read to the end (/data/big.csv)"},
	}
}

// TestSecretsAnywhere: the content scan finds each secret, in whatever
// file, and no output shows it.
func TestSecretsAnywhere(t *testing.T) {
	for _, c := range secretImageCases() {
		t.Run(c.name, func(t *testing.T) {
			img := image(t, secretLayers(t, c.layers)...)
			r, err := Inspect(t.Context(), img, Options{DB: db(t), Limits: c.lim})
			must(t, err)
			ch := checkNamed(r.Checks, "secrets")
			if ch == nil || ch.Status != c.status {
				t.Fatalf("secrets = %+v, want %s", ch, c.status)
			}
			if !strings.Contains(ch.Message, c.msgHas) {
				t.Errorf("message lacks %q:\n%s", c.msgHas, ch.Message)
			}
			b, err := json.Marshal(r)
			must(t, err)
			if c.secret != "" && bytes.Contains(b, []byte(c.secret)) {
				t.Errorf("the report shows the secret")
			}
		})
	}
}

func secretLayers(t testing.TB, layers [][]ent) []v1.Layer {
	base := []ent{reg("etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n")}
	out := []v1.Layer{entLayer(t, base...)}
	for _, es := range layers {
		out = append(out, entLayer(t, es...))
	}
	return out
}

// TestScanChunking: a token at every offset around a chunk boundary is
// found once.
func TestScanChunking(t *testing.T) {
	ghp := "ghp_" + fake(111, alnum, 36)
	edge := scanChunk - maxRuleLen - scanBack
	for _, at := range []int{0, edge - len(ghp), edge - 20, edge - 1, edge, edge + 1, scanChunk - 1, scanChunk, 2*scanChunk - 7} {
		body := strings.Repeat(" ", at) + ghp + "\n" + strings.Repeat(" ", 3*scanChunk)
		s := newScanBudget(Limits{}).file("app/x")
		// Feed it in odd pieces, as a tar reader would.
		r := io.TeeReader(strings.NewReader(body), s)
		buf := make([]byte, 32<<10+3)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
		hits, cut, err := s.finish(r)
		must(t, err)
		if len(hits) != 1 || cut {
			t.Errorf("token at %d: %d hits (cut %v), want 1", at, len(hits), cut)
		}
	}
}

// BenchmarkSecretScan measures the content scan on real text (Go's own
// sources, as a stand-in for the Python and headers of an ML image):
// MB/s is the cost per byte of text; binaries stop at the sniff.
func BenchmarkSecretScan(b *testing.B) {
	var text bytes.Buffer
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skip("no go command to find Go's sources")
	}
	root := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || text.Len() > 64<<20 {
			return nil
		}
		if bb, err := os.ReadFile(p); err == nil && !isBinary(bb[:min(len(bb), scanSniff)]) {
			text.Write(bb)
		}
		return nil
	})
	if text.Len() == 0 {
		b.Skip("no Go sources to read")
	}
	data := text.Bytes()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		s := newScanBudget(Limits{}).file("app/x")
		for off := 0; off < len(data); off += 32 << 10 {
			_, _ = s.Write(data[off:min(len(data), off+32<<10)])
		}
		if _, _, err := s.finish(bytes.NewReader(nil)); err != nil {
			b.Fatal(err)
		}
	}
}
