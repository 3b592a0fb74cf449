package validate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Secrets are found by their vendor's documented format, so that a
// random-looking string (a digest, a UUID, base64 of random data) is not
// one. What is found is never printed: messages name its kind and show a
// redacted prefix and its length ("AKIA… (20 chars)").
//
// Formats, from the vendors' documentation:
//   - AWS access key IDs: 20 characters, AKIA (long-lived) or ASIA (STS)
//     then 16 upper-case letters and digits (AWS IAM "unique ID prefixes";
//     AWS's own example is AKIAIOSFODNN7EXAMPLE).
//   - GitHub: ghp_, gho_, ghu_, ghs_, ghr_ then 36 of [A-Za-z0-9]
//     (GitHub changelog 2021-03-31); fine-grained github_pat_ then 22, "_",
//     59.
//   - GitLab personal access tokens: glpat- then 20 or more of
//     [A-Za-z0-9_-] (GitLab's default prefix since 14.5).
//   - Hugging Face: hf_ then 34 letters and digits.
//   - PyPI API tokens: pypi- then a base64url macaroon, which begins AgE.
//   - npm: npm_ then 36 letters and digits (npm's 2021 token format).
//   - Azure storage: AccountKey= then 88 characters of base64 (a 64-byte
//     key) in a connection string; the storage emulator's published
//     account (devstoreaccount1) is not a secret.
//   - Private keys: a PEM "-----BEGIN … PRIVATE KEY-----" header (PKCS#1,
//     PKCS#8, EC, OpenSSH, encrypted, PGP) followed by its base64 body.
//   - GCP service-account keys: JSON with "type": "service_account" and a
//     "private_key" that holds such a PEM key.
var (
	reURLCreds    = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*)://([^/\s:@'"]+):([^/\s@'"]+)@([^/\s'"?#]+)`)
	rePrivateKey  = regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----`)
	rePrivateBody = regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----(?:\s|\\n|\\r)+(?:Proc-Type:|Version:|[A-Za-z0-9+/=]{40,})`)
	reNetrcPass   = regexp.MustCompile(`(?m)\bpassword\s+(\S+)`)
	reIniPass     = regexp.MustCompile(`(?mi)^[ \t]*password[ \t]*[:=][ \t]*(.*?)[ \t\r]*$`)
	reAWSSecret   = regexp.MustCompile(`(?mi)^\s*aws_secret_access_key\s*=\s*(\S+)`)
	reNpmAuth     = regexp.MustCompile(`(?m)_(?:authToken|auth|password)\s*=\s*(\S+)`)
	reSecretEnv   = regexp.MustCompile(`(?i)(secret|token|passw(or)?d|api_?key|access_?key|credential)`)
	// reBuildArgs is how BuildKit and Docker record the build arguments a
	// RUN step saw in history[].created_by: "RUN |2 A=x B=y /bin/sh -c …".
	reBuildArgs = regexp.MustCompile(`^(?:RUN )?\|([0-9]+) (.*)$`)
)

// tokenPattern is one documented token format.
type tokenPattern struct {
	what string
	re   *regexp.Regexp
	// keep is how many leading characters of a match may be shown: the
	// fixed, public prefix of the format. -1 is a private key (its PEM
	// header is shown), -2 a URL (scheme and host), -3 a value after a
	// key (submatch 1 is the secret; only its length is shown).
	keep int
	// ok, when set, rejects matches that are not secrets.
	ok func(m string) bool
	// keywords are what the content scan looks for before it runs re: a
	// match holds one of them, within scanBack bytes of its start.
	keywords [][]byte
	// weak rules (a key after a name, a PEM key, a URL, a JWT) are not
	// run on documentation and tests, which hold examples of them; a
	// vendor's prefixed token is found everywhere.
	weak bool
	// span is how far past a keyword the content scan looks for the rest
	// of a match (default 256, at most maxRuleLen), back how far before
	// it for its start (default 64, at most scanBack).
	span, back int
}

// maxRuleLen is the longest span of any rule.
const maxRuleLen = 2048

// spanOf is p's span.
func (p *tokenPattern) spanOf() int {
	if p.span == 0 {
		return 256
	}
	return p.span
}

// backOf is p's back.
func (p *tokenPattern) backOf() int {
	if p.back == 0 {
		return 64
	}
	return p.back
}

func kw(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// valueRule is a secret written after a key ("password ", "token: "):
// submatch 1 is the value, and a placeholder is not a secret.
func valueRule(what, expr string, ok func(v string) bool, keywords ...string) tokenPattern {
	re := regexp.MustCompile(expr)
	return tokenPattern{what: what, re: re, keep: -3, weak: true, keywords: kw(keywords...), ok: func(m string) bool {
		s := re.FindStringSubmatch(m)
		return s != nil && !placeholder(s[1]) && (ok == nil || ok(s[1]))
	}}
}

// The formats below follow trivy's builtin rules (pkg/fanal/secret/
// builtin-rules.go, Apache-2.0) and gitleaks' config/gitleaks.toml (MIT),
// cut to the providers an ML image meets, each with the keywords its
// match must hold (docs/validate.md says why these and not the library).
var tokenPatterns = []tokenPattern{
	{what: "an AWS access key", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), keep: 4, keywords: kw("AKIA", "ASIA")},
	valueRule("an AWS secret access key", `(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b`, nil, "ecret_access_key", "ECRET_ACCESS_KEY", "ecretAccessKey"),
	{what: "a GitHub token", re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`), keep: 4, keywords: kw("ghp_", "gho_", "ghu_", "ghs_", "ghr_")},
	{what: "a GitHub token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`), keep: 11, keywords: kw("github_pat_")},
	{what: "a GitLab token", re: regexp.MustCompile(`\bgl(?:pat|rt|dt|ptt)-[A-Za-z0-9_-]{20,}`), keep: 6, keywords: kw("glpat-", "glrt-", "gldt-", "glptt-")},
	{what: "a Hugging Face token", re: regexp.MustCompile(`\bhf_[A-Za-z0-9]{34,40}\b`), keep: 3, keywords: kw("hf_")},
	{what: "an OpenAI key", re: regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,160}T3BlbkFJ[A-Za-z0-9_-]{20,160}`), keep: 3, keywords: kw("T3BlbkFJ"), back: scanBack},
	{what: "an Anthropic key", re: regexp.MustCompile(`\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,120}`), keep: 7, keywords: kw("sk-ant-")},
	{what: "a Slack token", re: regexp.MustCompile(`\bxox[baprse]-[0-9]{10,13}-[0-9A-Za-z-]{10,}`), keep: 5, keywords: kw("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-")},
	{what: "a Slack webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{43,56}`), keep: len("https://hooks.slack.com/"), keywords: kw("hooks.slack.com")},
	{what: "a Stripe key", re: regexp.MustCompile(`\b[sr]k_(?:live|test)_[0-9A-Za-z]{10,99}\b`), keep: 8, keywords: kw("k_live_", "k_test_"), ok: notStripeDocs},
	{what: "a Google API key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), keep: 4, keywords: kw("AIza")},
	{what: "a PyPI token", re: regexp.MustCompile(`\bpypi-AgE[A-Za-z0-9_-]{50,}`), keep: 5, keywords: kw("pypi-AgE"), span: 512},
	{what: "an npm token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), keep: 4, keywords: kw("npm_")},
	{what: "an Azure storage key", re: regexp.MustCompile(`AccountKey=[A-Za-z0-9+/]{86}==`), keep: len("AccountKey="), ok: notAzurite, keywords: kw("AccountKey=")},
	valueRule("an Azure client secret", "(?:^|[\\'\"`\\s>=:(,)])([a-zA-Z0-9_~.]{3}[0-9]Q~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'\"`\\s<),])", nil, "Q~"),
	{what: "a JSON Web Token", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}`), keep: 3, keywords: kw("eyJhbGci", "eyJ0eXAi", "eyJraWQi"), span: maxRuleLen, ok: notExampleJWT, weak: true},
	valueRule("a kubeconfig token", `(?m)^[ \t-]*token:[ \t]*["']?([A-Za-z0-9._~+/=:-]{20,})(?:["'\s]|$)`, hasDigit, "token:"),
	valueRule("a kubeconfig client key", `client-key-data:[ \t]*["']?([A-Za-z0-9+/=]{40,})`, nil, "client-key-data:"),
	valueRule("registry credentials", `"auth"\s*:\s*"([A-Za-z0-9+/=]{8,})"`, dockerAuth, `"auth"`),
	valueRule("a registry identity token", `"identitytoken"\s*:\s*"([A-Za-z0-9+/=._-]{16,})"`, nil, `"identitytoken"`),
	valueRule("a .netrc password", `machine[ \t]+\S+\s+login[ \t]+\S+\s+password[ \t]+(\S+)`, nil, "machine"),
	{what: "a private key", re: rePrivateBody, keep: -1, keywords: kw("PRIVATE KEY"), weak: true},
	{what: "a URL with a password", re: reURLCreds, keep: -2, ok: urlHasPassword, keywords: kw("://"), weak: true},
}

func hasDigit(v string) bool { return strings.ContainsAny(v, "0123456789") }

// notStripeDocs rejects the test key of Stripe's public documentation.
func notStripeDocs(m string) bool { return m != "sk_test_4eC39HqLyjWDarjtT1zdp7dc" }

// notExampleJWT rejects what is not a JSON Web Token (a payload that is
// not base64url JSON) and the examples of jwt.io and PyJWT's
// documentation, which libraries carry in their docstrings.
func notExampleJWT(m string) bool {
	parts := strings.Split(m, ".")
	if len(parts) < 3 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil || !json.Valid(b) {
		return false
	}
	p := string(b)
	return !strings.Contains(p, `"John Doe"`) && !strings.Contains(p, `"1234567890"`) && p != `{"some":"payload"}`
}

// dockerAuth accepts an "auth" that is base64 of user:password, as
// Docker's config.json holds.
func dockerAuth(v string) bool {
	b, err := base64.StdEncoding.DecodeString(v)
	return err == nil && bytes.IndexByte(b, ':') > 0
}

// azuriteKey is the storage emulator's published account key.
const azuriteKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

func notAzurite(m string) bool { return !strings.HasSuffix(m, azuriteKey) }

// placeholder reports whether a password value is a stand-in, as in
// documentation and templates: "password", "${PASS}", "<token>", "****",
// a format string's "{self.password}".
func placeholder(v string) bool {
	v = strings.TrimSpace(strings.Trim(v, `"',;`))
	switch {
	case v == "", strings.HasPrefix(v, "$"), strings.HasPrefix(v, "%"), strings.HasPrefix(v, "{{"),
		strings.HasPrefix(v, "<") && strings.HasSuffix(v, ">"), strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}"), strings.Trim(v, "*xX.•_-") == "":
		return true
	}
	l := strings.ToLower(v)
	switch l {
	case "password", "passwd", "pass", "secret", "token", "none", "null", "redacted":
		return true
	}
	return strings.HasPrefix(l, "your") || strings.Contains(l, "example") || strings.Contains(l, "placeholder") || strings.Contains(l, "changeme")
}

// urlHasPassword rejects placeholders and the credentials of
// documentation that libraries carry in their docstrings: a password
// equal to the user (guest:guest, postgres:postgres) and SQLAlchemy's
// scott:tiger.
func urlHasPassword(m string) bool {
	s := reURLCreds.FindStringSubmatch(m)
	return s != nil && !placeholder(s[3]) && s[2] != s[3] && s[3] != "tiger"
}

// reservedHost says whether a URL's host is one of the names RFC 2606 and
// RFC 6761 keep for documentation and tests (example.com, *.example,
// *.test, *.invalid, localhost), or the IDN test domain 測試. The content
// scan does not report such a URL found in a file (docs are full of
// them); the environment, labels and history still do, and redaction
// masks it everywhere.
func reservedHost(h string) bool {
	h, _, _ = strings.Cut(strings.ToLower(h), ":")
	for _, d := range []string{"example.com", "example.net", "example.org", "example", "test", "invalid", "localhost", "測試", "xn--g6w251d"} {
		if h == d || strings.HasSuffix(h, "."+d) {
			return true
		}
	}
	return false
}

// secretMatch is one secret found: its kind and how it may be shown.
type secretMatch struct {
	what  string
	shown string
}

func (m secretMatch) String() string { return m.what + " (" + m.shown + ")" }

// redact shows a match without its secret part.
func redact(p tokenPattern, m string) string {
	switch p.keep {
	case -1: // a private key: its PEM header is not secret
		return rePrivateKey.FindString(m) + "…"
	case -2: // a URL: the scheme and host only
		s := reURLCreds.FindStringSubmatch(m)
		return fmt.Sprintf("%s://…:…@%s", s[1], s[4])
	case -3: // a value: its length only
		if s := p.re.FindStringSubmatch(m); s != nil {
			return redactValue(s[1], 0)
		}
		return redactValue(m, 0)
	}
	return redactValue(m, p.keep)
}

// redactValue shows keep leading characters of v and its length.
func redactValue(v string, keep int) string {
	n := utf8.RuneCountInString(v)
	keep = max(min(keep, n/4), 0)
	r := []rune(v)
	return fmt.Sprintf("%s… %d chars", string(r[:keep]), n)
}

// secretsInText finds documented token formats in free text.
func secretsInText(s string) []secretMatch {
	var out []secretMatch
	for _, p := range tokenPatterns {
		for _, m := range p.re.FindAllString(s, 4) {
			if p.ok != nil && !p.ok(m) {
				continue
			}
			out = append(out, secretMatch{what: p.what, shown: redact(p, m)})
		}
	}
	return out
}

// redactText replaces every secret in s with its redacted form, so text
// around it (a history line) can be shown.
func redactText(s string) string {
	for _, p := range tokenPatterns {
		s = p.re.ReplaceAllStringFunc(s, func(m string) string {
			if p.ok != nil && !p.ok(m) {
				return m
			}
			return "[" + redact(p, m) + "]"
		})
	}
	return s
}

// isSecretFile names files that commonly hold credentials.
func isSecretFile(p string) bool {
	base := path.Base(p)
	switch base {
	case ".netrc", "_netrc", ".pypirc", ".git-credentials", "pip.conf", "pip.ini", "credentials", ".npmrc", "id_rsa", "id_ecdsa", "id_ed25519", "id_dsa", ".env":
		return true
	}
	if strings.HasSuffix(p, ".docker/config.json") {
		return true
	}
	return strings.HasSuffix(base, ".pem") || strings.HasSuffix(base, ".key")
}

// maybeServiceAccount says whether a file may be a GCP service-account
// key: a small JSON file.
func maybeServiceAccount(p string, size int64) bool {
	return strings.HasSuffix(p, ".json") && size > 0 && size <= 64<<10
}

// secretsInFile says what secrets a file holds.
func secretsInFile(p string, b []byte) []secretMatch {
	s := string(b)
	base := path.Base(p)
	var out []secretMatch
	add := func(what, v string) {
		if !placeholder(v) {
			out = append(out, secretMatch{what: what, shown: redactValue(strings.Trim(v, `"'`), 0)})
		}
	}
	switch {
	case strings.HasSuffix(p, ".json") && strings.Contains(s, "service_account"):
		var sa struct {
			Type       string `json:"type"`
			PrivateKey string `json:"private_key"`
			Email      string `json:"client_email"`
		}
		if json.Unmarshal(b, &sa) == nil && sa.Type == "service_account" && rePrivateKey.MatchString(sa.PrivateKey) {
			out = append(out, secretMatch{what: "a GCP service-account key", shown: "private_key of " + redactValue(sa.Email, 4)})
		}
	case rePrivateKey.MatchString(s) && (isSecretFile(p)):
		out = append(out, secretMatch{what: "a private key", shown: rePrivateKey.FindString(s) + "…"})
		return out
	case base == ".netrc" || base == "_netrc":
		for _, m := range reNetrcPass.FindAllStringSubmatch(s, 4) {
			add("a password", m[1])
		}
	case strings.HasSuffix(p, ".docker/config.json"):
		var cfg struct {
			Auths map[string]struct {
				Auth          string `json:"auth"`
				Password      string `json:"password"`
				IdentityToken string `json:"identitytoken"`
			} `json:"auths"`
		}
		if json.Unmarshal(b, &cfg) == nil {
			for reg, a := range cfg.Auths {
				if v := a.Auth + a.Password + a.IdentityToken; v != "" {
					out = append(out, secretMatch{what: "registry credentials", shown: fmt.Sprintf("auths[%q] %s", reg, redactValue(v, 0))})
				}
			}
		}
	case base == "credentials":
		for _, m := range reAWSSecret.FindAllStringSubmatch(s, 4) {
			add("an AWS secret access key", m[1])
		}
	case base == ".pypirc" || base == "pip.conf" || base == "pip.ini":
		for _, m := range reIniPass.FindAllStringSubmatch(s, 4) {
			add("a package index password", m[1])
		}
	case base == ".npmrc":
		for _, m := range reNpmAuth.FindAllStringSubmatch(s, 4) {
			add("an npm registry token", m[1])
		}
	}
	if len(out) > 0 {
		return out
	}
	return secretsInText(s)
}

// secretInEnv checks an image's environment variables.
func secretInEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if ms := secretsInText(v); len(ms) > 0 {
			out = append(out, fmt.Sprintf("%s in the environment variable %s", joinMatches(ms), k))
		} else if reSecretEnv.MatchString(k) && v != "" && k != "NVIDIA_REQUIRE_CUDA" {
			out = append(out, fmt.Sprintf("the environment variable %s has a value (%s); secrets belong in build secrets or run-time environment", k, redactValue(v, 0)))
		}
	}
	return out
}

// secretsInHistory checks each history step's created_by: tokens in the
// command and build arguments named like secrets that had a value.
func secretsInHistory(created []string) []string {
	var out []string
	for i, c := range created {
		var what []string
		if ms := secretsInText(c); len(ms) > 0 {
			what = append(what, joinMatches(ms))
		}
		shown := redactText(c)
		if m := reBuildArgs.FindStringSubmatch(c); m != nil {
			for kv := range strings.FieldsSeq(m[2]) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					break
				}
				if reSecretEnv.MatchString(k) && v != "" {
					// Never shown, placeholder or not.
					shown = strings.Replace(shown, kv, k+"=["+redactValue(v, 0)+"]", 1)
					if !placeholder(v) && len(secretsInText(v)) == 0 {
						what = append(what, fmt.Sprintf("the build argument %s (%s)", k, redactValue(v, 0)))
					}
				}
			}
		}
		if len(what) > 0 {
			out = append(out, fmt.Sprintf("%s in the image history, step %d (%s)", strings.Join(what, ", "), i, truncate(shown, 80)))
		}
	}
	return out
}

// secretsInLabels checks label values.
func secretsInLabels(labels map[string]string) []string {
	var out []string
	for k, v := range labels {
		if ms := secretsInText(v); len(ms) > 0 {
			out = append(out, joinMatches(ms)+" in the label "+k)
		}
	}
	return out
}

func joinMatches(ms []secretMatch) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return strings.Join(s, ", ")
}
