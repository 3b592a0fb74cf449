package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuimg/gpuimg/internal/verbs"
)

func newKeygenCmd() *cobra.Command {
	var spec verbs.KeygenSpec
	var output string
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Write a cosign-compatible encrypted key pair (cosign.key, cosign.pub)",
		Long: `keygen writes the key pair gpuimg sign and cosign sign take, in the format
cosign generate-key-pair writes: an ECDSA P-256 key, the private key's PKCS#8
encrypted with scrypt and NaCl secretbox ("ENCRYPTED SIGSTORE PRIVATE KEY",
mode 0600) and the public key as PEM (mode 0644). cosign reads both, so a
key made here signs with cosign and verifies with gpuimg, and the other way.

The password comes from COSIGN_PASSWORD (set and empty: no password, as
cosign allows), else it is asked for twice on the terminal. Existing files
are not replaced unless --force is given.`,
		Example: `  gpuimg keygen                               # asks for the password
  COSIGN_PASSWORD=… gpuimg keygen --output-key-prefix release
  COSIGN_PASSWORD=… gpuimg sign registry.example.com/ml/torch:2.3 --key release.key
  gpuimg verify registry.example.com/ml/torch:2.3 --key release.pub`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			pass, err := keyPassword(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			spec.Password = pass
			files, err := verbs.Keygen(spec)
			if errors.Is(err, verbs.ErrKeyExists) {
				return invalid(err, "pass --force to replace it, or --output-key-prefix for other file names")
			}
			if err != nil {
				return invalid(err, "")
			}
			w := cmd.OutOrStdout()
			return render(w, output, files, func() error {
				_, err := fmt.Fprintf(w, "private key: %s\npublic key:  %s\n", files.PrivateKey, files.PublicKey)
				return err
			})
		},
	}
	cmd.Flags().StringVar(&spec.Prefix, "output-key-prefix", "cosign", "write PREFIX.key and PREFIX.pub")
	cmd.Flags().BoolVar(&spec.Force, "force", false, "replace existing key files")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

// keyPassword is a new key's password: COSIGN_PASSWORD when it is set
// (empty too), else asked twice on the terminal in, never echoed.
func keyPassword(in io.Reader, prompt io.Writer) ([]byte, error) {
	if p, ok := os.LookupEnv("COSIGN_PASSWORD"); ok {
		return []byte(p), nil
	}
	fd, ok := isTerminal(in)
	if !ok {
		return nil, invalid(errors.New("no password for the private key: COSIGN_PASSWORD is not set and stdin is not a terminal"), "set COSIGN_PASSWORD (empty for no password)")
	}
	read := func(what string) ([]byte, error) {
		fmt.Fprint(prompt, what)
		p, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, fmt.Errorf("read password: %w", err)
		}
		return p, nil
	}
	p, err := read("Enter password for private key: ")
	if err != nil {
		return nil, err
	}
	again, err := read("Enter password for private key again: ")
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(p, again) {
		return nil, invalid(errors.New("the passwords do not match"), "run gpuimg keygen again")
	}
	return p, nil
}
