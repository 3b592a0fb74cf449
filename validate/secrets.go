package validate

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

var (
	reURLCreds   = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'"]+:[^/\s@'"]+@[^\s'"]+`)
	reAWSKey     = regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)
	reGitHubTok  = regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`)
	reHFTok      = regexp.MustCompile(`\bhf_[A-Za-z0-9]{34}\b`)
	rePrivateKey = regexp.MustCompile(`-----BEGIN ([A-Z]+ )?PRIVATE KEY-----`)
	reNetrcPass  = regexp.MustCompile(`(?m)\bpassword\s+\S+`)
	reSecretEnv  = regexp.MustCompile(`(?i)(secret|token|passw(or)?d|api_?key|access_?key|credential)`)
)

// isSecretFile names files that commonly hold credentials.
func isSecretFile(p string) bool {
	base := path.Base(p)
	switch base {
	case ".netrc", "_netrc", ".pypirc", ".git-credentials", "pip.conf", "pip.ini", "credentials", ".npmrc", "id_rsa", "id_ecdsa", "id_ed25519", ".env":
		return true
	}
	if strings.HasSuffix(p, ".docker/config.json") {
		return true
	}
	return strings.HasSuffix(base, ".pem") || strings.HasSuffix(base, ".key")
}

// secretIn says what secret a credentials file holds, or "".
func secretIn(p string, b []byte) string {
	s := string(b)
	base := path.Base(p)
	switch {
	case rePrivateKey.MatchString(s):
		return fmt.Sprintf("private key in /%s", p)
	case (base == ".netrc" || base == "_netrc") && reNetrcPass.MatchString(s):
		return fmt.Sprintf("password in /%s", p)
	case strings.HasSuffix(p, ".docker/config.json") && strings.Contains(s, `"auth"`):
		return fmt.Sprintf("registry credentials in /%s", p)
	case base == "credentials" && strings.Contains(s, "aws_secret_access_key"):
		return fmt.Sprintf("cloud credentials in /%s", p)
	case base == ".git-credentials" && reURLCreds.MatchString(s):
		return fmt.Sprintf("git credentials in /%s", p)
	case base == ".pypirc" && strings.Contains(s, "password"):
		return fmt.Sprintf("package index password in /%s", p)
	}
	if what := secretInText(s); what != "" {
		return fmt.Sprintf("%s in /%s", what, p)
	}
	return ""
}

// secretInText finds credentials in free text (URLs, tokens, keys).
func secretInText(s string) string {
	switch {
	case reURLCreds.MatchString(s):
		return "a URL with a password"
	case reAWSKey.MatchString(s):
		return "an AWS access key"
	case reGitHubTok.MatchString(s):
		return "a GitHub token"
	case reHFTok.MatchString(s):
		return "a Hugging Face token"
	case rePrivateKey.MatchString(s):
		return "a private key"
	}
	return ""
}

// secretInEnv checks an image's environment variables.
func secretInEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if what := secretInText(v); what != "" {
			out = append(out, fmt.Sprintf("%s in the environment variable %s", what, k))
		} else if reSecretEnv.MatchString(k) && v != "" && k != "NVIDIA_REQUIRE_CUDA" {
			out = append(out, fmt.Sprintf("the environment variable %s has a value; secrets belong in build secrets or run-time environment", k))
		}
	}
	return out
}
