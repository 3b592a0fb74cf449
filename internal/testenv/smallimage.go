package testenv

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// FilesImage is a linux/amd64 image of one layer holding files (name,
// content; names as written, so "../x" escapes), its config changed by
// edit when edit is not nil.
func FilesImage(files [][2]string, edit func(*v1.Config)) (v1.Image, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	if edit != nil {
		edit(&cfg.Config)
	}
	return mutate.ConfigFile(img, cfg)
}

// CUDATorchImage is a small image laid out as a CUDA (cuda, 12.2.2) image
// with Python 3.10 and torch 2.3.1 built for torchCUDA (12.1), and
// NVIDIA_REQUIRE_CUDA=require: what static validation reads, a few
// hundred bytes.
func CUDATorchImage(cuda, torchCUDA, require string) (v1.Image, error) {
	tag := "cu" + strings.ReplaceAll(torchCUDA, ".", "")
	mm := cuda[:strings.LastIndex(cuda, ".")]
	sp := "opt/venv/lib/python3.10/site-packages/"
	return FilesImage([][2]string{
		{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"},
		{"usr/local/cuda-" + mm + "/version.json", `{"cuda":{"version":"` + cuda + `"}}`},
		{"opt/venv/pyvenv.cfg", "version = 3.10.12\n"},
		{sp + "torch/version.py", "__version__ = '2.3.1+" + tag + "'\ncuda = '" + torchCUDA + "'\n"},
		{sp + "torch-2.3.1+" + tag + ".dist-info/METADATA", "Name: torch\nVersion: 2.3.1+" + tag + "\n"},
	}, func(c *v1.Config) { c.Env = []string{"NVIDIA_REQUIRE_CUDA=" + require} })
}

// PEMKeyPair writes a new ECDSA P-256 key pair as dir/NAME.key (PKCS #8
// PEM) and dir/NAME.pub (PKIX PEM) and returns their paths.
func PEMKeyPair(dir, name string) (key, pub string, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", "", err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		return "", "", err
	}
	key, pub = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return "", "", err
	}
	return key, pub, nil
}
