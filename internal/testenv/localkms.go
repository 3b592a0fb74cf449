package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// LocalKMSTool builds local-kms (github.com/nsmithuk/local-kms, an AWS KMS
// emulator pinned in its own module, tools/localkms/go.mod) into bin/ of
// the checkout, unless it is there already, and returns its path.
func LocalKMSTool(ctx context.Context) (string, error) {
	return pinnedTool(ctx, "local-kms", "localkms", "github.com/nsmithuk/local-kms",
		"from tools/localkms/go.mod into bin/, once (under a minute on two cores)")
}

// LocalKMS is a running local-kms, AWS KMS's API on 127.0.0.1.
type LocalKMS struct {
	// Endpoint is its URL, for AWS_ENDPOINT_URL_KMS.
	Endpoint string
	cmd      *exec.Cmd
	done     chan struct{}
}

// StartLocalKMS starts local-kms on a free port of 127.0.0.1 with its
// keys under dir, and waits until it accepts connections.
func StartLocalKMS(ctx context.Context, bin, dir string) (*LocalKMS, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "local-kms.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("PORT=%d", port),
		"KMS_DATA_PATH="+filepath.Join(dir, "data"),
		"KMS_SEED_PATH="+filepath.Join(dir, "no-seed.yaml"),
		"KMS_REGION=us-east-1",
		"KMS_ACCOUNT_ID=111122223333")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start local-kms: %w", err)
	}
	k := &LocalKMS{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(k.done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return k, nil
		}
		select {
		case <-k.done:
			b, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("local-kms exited at start: %s", b)
		case <-ctx.Done():
			k.Stop()
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.Stop()
			return nil, fmt.Errorf("local-kms on port %d did not answer within 20s", port)
		}
	}
}

// Stop kills local-kms by PID and waits for it.
func (k *LocalKMS) Stop() {
	if k == nil || k.cmd.Process == nil {
		return
	}
	stopByPID(k.cmd, k.done, 5*time.Second, false)
}

// Env is the AWS SDK environment that points KMS clients (sigstore's
// awskms:// provider, cosign) at this local-kms with dummy credentials
// and no shared config; dir holds nothing and is named only so no real
// ~/.aws file is read. The endpoint travels as AWS_ENDPOINT_URL_KMS:
// sigstore's provider turns an endpoint written inside the URI into
// https://, and local-kms speaks plain http.
func (k *LocalKMS) Env(dir string) map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_KMS":        k.Endpoint,
		"AWS_REGION":                  "us-east-1",
		"AWS_ACCESS_KEY_ID":           "test",
		"AWS_SECRET_ACCESS_KEY":       "test",
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
	}
}

// NewKey creates an ECC_NIST_P256 signing key named alias/ALIAS and
// returns its URI as gpuimg and cosign take it, awskms:///alias/ALIAS.
func (k *LocalKMS) NewKey(ctx context.Context, alias string) (string, error) {
	client := kms.New(kms.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(k.Endpoint),
		Credentials:  aws.AnonymousCredentials{},
	})
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistP256, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
	if err != nil {
		return "", fmt.Errorf("create a KMS key on local-kms: %w", err)
	}
	if _, err := client.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/" + alias), TargetKeyId: out.KeyMetadata.KeyId}); err != nil {
		return "", fmt.Errorf("create KMS alias %s: %w", alias, err)
	}
	return "awskms:///alias/" + alias, nil
}
