package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuimg/gpuimg/builder"
	"github.com/gpuimg/gpuimg/internal/testenv"
)

// TestBuilderTLS connects to a real buildkitd listening on tcp:// with
// mutual TLS, through the --builder-tls-* flags' options.
func TestBuilderTLS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: buildkitd")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	ctx := t.Context()
	tools, err := testenv.BuildTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "gt-")
	must(t, err)
	defer os.RemoveAll(dir)
	files := writeCerts(t, dir)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := "tcp://" + l.Addr().String()
	l.Close()
	cmd := exec.Command(tools.Buildkitd, "--root", filepath.Join(dir, "root"), "--addr", addr,
		"--tlscacert", files["ca"], "--tlscert", files["server"], "--tlskey", files["server-key"], "--oci-worker-net", "host")
	logf, err := os.Create(filepath.Join(dir, "log"))
	must(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	must(t, cmd.Start())
	defer func() {
		_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	}()

	o := &BuildOptions{TLSCA: files["ca"], TLSCert: files["client"], TLSKey: files["client-key"], TLSName: "127.0.0.1"}
	var lastErr error
	for range 100 {
		c, err := builder.Connect(ctx, addr, o.clientOpts()...)
		if err == nil {
			c.Close()
			lastErr = nil
			break
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	if lastErr != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "log"))
		t.Fatalf("connect with TLS: %v\n%s", lastErr, b)
	}
	// Without a client certificate the daemon must refuse.
	noCert := &BuildOptions{TLSCA: files["ca"], TLSName: "127.0.0.1"}
	if c, err := builder.Connect(ctx, addr, noCert.clientOpts()...); err == nil {
		c.Close()
		t.Fatal("connected without a client certificate: the test proves nothing")
	} else if !strings.Contains(err.Error(), addr) {
		t.Errorf("error does not name the daemon: %v", err)
	}
}

// writeCerts makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in dir.
func writeCerts(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	write := func(name, typ string, der []byte) {
		p := filepath.Join(dir, name+".pem")
		must(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		out[name] = p
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuimg test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	must(t, err)
	write("ca", "CERTIFICATE", caDER)
	for i, leaf := range []struct {
		name string
		use  x509.ExtKeyUsage
	}{{"server", x509.ExtKeyUsageServerAuth}, {"client", x509.ExtKeyUsageClientAuth}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "gpuimg test " + leaf.name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.use},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		must(t, err)
		write(leaf.name, "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		must(t, err)
		write(leaf.name+"-key", "EC PRIVATE KEY", kb)
	}
	return out
}
