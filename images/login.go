package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/types"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// LoginHint is the command that logs Docker (and so gpuimg) in to a
// registry host: the cloud CLI's for Amazon ECR, Google Artifact Registry
// and Container Registry, and Azure Container Registry, else docker login.
func LoginHint(host string) string {
	h := host
	if i := strings.LastIndex(h, ":"); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	parts := strings.Split(h, ".")
	switch {
	case len(parts) >= 6 && parts[1] == "dkr" && parts[2] == "ecr" && strings.HasPrefix(strings.Join(parts[4:], "."), "amazonaws.com"):
		// ACCOUNT.dkr.ecr.REGION.amazonaws.com[.cn]
		return fmt.Sprintf("`aws ecr get-login-password --region %s | docker login --username AWS --password-stdin %s`", parts[3], host)
	case strings.HasSuffix(h, "-docker.pkg.dev"):
		return fmt.Sprintf("`gcloud auth configure-docker %s`", h)
	case h == "gcr.io" || strings.HasSuffix(h, ".gcr.io"):
		return fmt.Sprintf("`gcloud auth configure-docker %s`", h)
	case strings.HasSuffix(h, ".azurecr.io"):
		return fmt.Sprintf("`az acr login --name %s`", parts[0])
	}
	return fmt.Sprintf("`docker login %s`", host)
}

// ErrBadCredentials is wrapped by Login when the registry refuses the
// user name and password.
var ErrBadCredentials = errors.New("the registry refused the user name and password")

// Login checks user and password against the registry host (a GET of
// /v2/ after go-containerregistry's ping and, for a token registry, the
// token exchange) and, when the registry accepts them, stores them as
// docker login and crane auth login do: through docker/cli's configfile
// in configDir (DOCKER_CONFIG; "" for ~/.docker), in the credential
// helper credHelpers names for host or credsStore names for all, else
// base64 in config.json. Docker Hub (index.docker.io, docker.io) is
// stored under https://index.docker.io/v1/, the key Docker reads. It
// returns the config file it wrote. Nothing is stored when the registry
// refuses them (ErrBadCredentials) or cannot be reached.
func Login(ctx context.Context, host, user, password, configDir string, opts ...Option) (string, error) {
	if user == "" || password == "" {
		return "", errors.New("login: a user name and a password are both needed")
	}
	o, reg, err := loginRegistry(host, opts)
	if err != nil {
		return "", err
	}
	if err := checkLogin(ctx, o, reg, &authn.Basic{Username: user, Password: password}); err != nil {
		return "", err
	}
	cf, err := config.Load(configDir)
	if err != nil {
		return "", fmt.Errorf("login: read the Docker config: %w", err)
	}
	key := authKey(reg)
	if err := cf.GetCredentialsStore(key).Store(types.AuthConfig{ServerAddress: key, Username: user, Password: password}); err != nil {
		return "", fmt.Errorf("login: store the credentials of %s (%s): %w", key, credStoreName(cf, key), err)
	}
	if err := cf.Save(); err != nil {
		return "", fmt.Errorf("login: write %s: %w", cf.Filename, err)
	}
	return cf.Filename, nil
}

// Logout removes the credentials of the registry host from the Docker
// config in configDir (and its credential helper), as docker logout and
// crane auth logout do. It returns the config file and whether there
// were credentials to remove.
func Logout(host, configDir string, opts ...Option) (file string, removed bool, err error) {
	_, reg, err := loginRegistry(host, opts)
	if err != nil {
		return "", false, err
	}
	cf, err := config.Load(configDir)
	if err != nil {
		return "", false, fmt.Errorf("logout: read the Docker config: %w", err)
	}
	key := authKey(reg)
	store := cf.GetCredentialsStore(key)
	if ac, gerr := store.Get(key); gerr == nil && (ac.Username != "" || ac.Password != "" || ac.IdentityToken != "" || ac.Auth != "") {
		removed = true
	}
	if err := store.Erase(key); err != nil {
		return "", false, fmt.Errorf("logout: erase the credentials of %s (%s): %w", key, credStoreName(cf, key), err)
	}
	if err := cf.Save(); err != nil {
		return "", false, fmt.Errorf("logout: write %s: %w", cf.Filename, err)
	}
	return cf.Filename, removed, nil
}

// loginRegistry parses host (HOST[:PORT], no repository) with opts: a
// loopback or insecure registry over plain HTTP.
func loginRegistry(host string, opts []Option) (*options, name.Registry, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, name.Registry{}, err
	}
	h := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(host, "https://"), "http://"), "/")
	if strings.Contains(h, "/") && h != "index.docker.io/v1" {
		return nil, name.Registry{}, fmt.Errorf("login: %q is not a registry host; give HOST or HOST:PORT, without a repository", host)
	}
	h = strings.TrimSuffix(h, "/v1")
	var nopts []name.Option
	if o.insecure(h) || IsLoopback(h) {
		nopts = append(nopts, name.Insecure)
	}
	reg, err := name.NewRegistry(h, nopts...)
	if err != nil {
		return nil, name.Registry{}, fmt.Errorf("login: registry %q: %w", host, err)
	}
	return o, reg, nil
}

// authKey is the config.json key of reg: Docker Hub's historical URL, else
// the host.
func authKey(reg name.Registry) string {
	if reg.RegistryStr() == name.DefaultRegistry {
		return authn.DefaultAuthKey
	}
	return reg.RegistryStr()
}

// credStoreName says where the credentials of key live: a helper's name
// or config.json.
func credStoreName(cf *configfile.ConfigFile, key string) string {
	if h := cf.CredentialHelpers[key]; h != "" {
		return "credential helper docker-credential-" + h
	}
	if cf.CredentialsStore != "" {
		return "credential store docker-credential-" + cf.CredentialsStore
	}
	return cf.Filename
}

// checkLogin asks the registry for /v2/ with auth, through the same
// transport, retries and user agent as every verb.
func checkLogin(ctx context.Context, o *options, reg name.Registry, auth authn.Authenticator) error {
	rt := transport.NewRetry(o.rt, transport.WithRetryBackoff(o.backoff), transport.WithRetryPredicate(transient),
		transport.WithRetryStatusCodes(retryStatusCodes...))
	rt = transport.NewUserAgent(rt, o.userAgent)
	rt, err := transport.NewWithContext(ctx, reg, auth, rt, nil)
	if err != nil {
		if te, ok := errors.AsType[*transport.Error](err); ok && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
			return fmt.Errorf("login %s: %w (%d)", reg.RegistryStr(), ErrBadCredentials, te.StatusCode)
		}
		return fmt.Errorf("login %s: %w", reg.RegistryStr(), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s/v2/", reg.Scheme(), reg.RegistryStr()), nil)
	if err != nil {
		return fmt.Errorf("login %s: %w", reg.RegistryStr(), err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return fmt.Errorf("login %s: %w", reg.RegistryStr(), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("login %s: %w (%d)", reg.RegistryStr(), ErrBadCredentials, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("login %s: GET /v2/ answered %s", reg.RegistryStr(), resp.Status)
	}
	return nil
}
