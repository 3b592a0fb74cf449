package testenv

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
	"path/filepath"
	"time"
)

// WriteCerts makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, as PEM files in dir: keys "ca", "server", "server-key",
// "client", "client-key" map to their paths.
func WriteCerts(dir string) (map[string]string, error) {
	out := map[string]string{}
	write := func(name, typ string, der []byte) error {
		p := filepath.Join(dir, name+".pem")
		out[name] = p
		return os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpuimg test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	if err := write("ca", "CERTIFICATE", caDER); err != nil {
		return nil, err
	}
	for i, leaf := range []struct {
		name string
		use  x509.ExtKeyUsage
	}{{"server", x509.ExtKeyUsageServerAuth}, {"client", x509.ExtKeyUsageClientAuth}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: "gpuimg test " + leaf.name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.use},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, err
		}
		if err := write(leaf.name, "CERTIFICATE", der); err != nil {
			return nil, err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := write(leaf.name+"-key", "EC PRIVATE KEY", kb); err != nil {
			return nil, err
		}
	}
	return out, nil
}
