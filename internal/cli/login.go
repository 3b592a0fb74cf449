package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuimg/gpuimg/images"
	"github.com/gpuimg/gpuimg/internal/bound"
)

// loginResult is what login and logout report.
type loginResult struct {
	Registry   string `json:"registry"`
	ConfigFile string `json:"config_file"`
	// Removed (logout) says whether there were credentials to remove.
	Removed *bool `json:"removed,omitempty"`
}

func newLoginCmd() *cobra.Command {
	ro := &RegistryOptions{}
	var user, password, output string
	var passwordStdin bool
	cmd := &cobra.Command{
		Use:   "login HOST -u USER --password-stdin",
		Short: "Log in to a registry: write its credentials where Docker keeps them",
		Long: `login checks a user name and password with the registry and stores them as
docker login and crane auth login do: in $DOCKER_CONFIG/config.json
(~/.docker/config.json without it), or in the credential helper that
config.json names for the registry (credHelpers) or for all (credsStore).
gpuimg, docker, buildx, crane and cosign all read them from there, so a CI
job without the docker CLI logs in with gpuimg alone. Nothing is written
when the registry refuses them.

The password comes from stdin with --password-stdin (never from the
command line in CI: it lands in the shell's history and ps), else it is
asked for on the terminal, never echoed.`,
		Example: `  echo "$REGISTRY_TOKEN" | gpuimg login registry.example.com -u ci --password-stdin
  aws ecr get-login-password | gpuimg login 123456789012.dkr.ecr.us-east-1.amazonaws.com -u AWS --password-stdin
  DOCKER_CONFIG=$RUNNER_TEMP/docker gpuimg login ghcr.io -u "$GITHUB_ACTOR" --password-stdin <<<"$GITHUB_TOKEN"
  gpuimg logout registry.example.com`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			if user == "" {
				return invalid(errors.New("login: no user name"), "pass -u USER (for Amazon ECR: -u AWS)")
			}
			pass, err := loginPassword(cmd, password, passwordStdin)
			if err != nil {
				return err
			}
			opts, err := ro.Options()
			if err != nil {
				return err
			}
			file, err := images.Login(cmd.Context(), args[0], user, pass, os.Getenv("DOCKER_CONFIG"), opts...)
			if errors.Is(err, images.ErrBadCredentials) {
				return invalid(err, "check the user name and password (or token) and run gpuimg login again; nothing was stored")
			}
			if err != nil {
				return invalid(err, "")
			}
			res := loginResult{Registry: args[0], ConfigFile: file}
			w := cmd.OutOrStdout()
			return render(w, output, res, func() error {
				_, err := fmt.Fprintf(w, "Login Succeeded: %s (credentials via %s)\n", args[0], file)
				return err
			})
		},
	}
	ro.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&user, "username", "u", "", "user name")
	cmd.Flags().StringVarP(&password, "password", "p", "", "password (prefer --password-stdin: a password on the command line lands in the shell's history)")
	cmd.Flags().BoolVar(&passwordStdin, "password-stdin", false, "read the password from stdin")
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}

// loginPassword is login's password: -p (with docker's warning),
// --password-stdin (one line, its line ending dropped), or asked on the
// terminal.
func loginPassword(cmd *cobra.Command, flag string, fromStdin bool) (string, error) {
	switch {
	case flag != "" && fromStdin:
		return "", invalid(errors.New("login: --password and --password-stdin both given"), "give one of them")
	case flag != "":
		fmt.Fprintln(cmd.ErrOrStderr(), "gpuimg: warning: a password on the command line lands in the shell's history and ps; use --password-stdin")
		return flag, nil
	case fromStdin:
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), bound.MaxUserFile))
		if err != nil {
			return "", invalid(fmt.Errorf("login: read the password from stdin: %w", err), "")
		}
		p := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if p == "" {
			return "", invalid(errors.New("login: stdin held no password"), "pipe the password in: echo \"$TOKEN\" | gpuimg login HOST -u USER --password-stdin")
		}
		return p, nil
	}
	fd, ok := isTerminal(cmd.InOrStdin())
	if !ok {
		return "", invalid(errors.New("login: no password: stdin is not a terminal"), "pass --password-stdin and pipe the password in")
	}
	fmt.Fprint(cmd.ErrOrStderr(), "Password: ")
	b, err := term.ReadPassword(fd)
	fmt.Fprintln(cmd.ErrOrStderr())
	if err != nil {
		return "", invalid(fmt.Errorf("login: read the password: %w", err), "")
	}
	return string(b), nil
}

func newLogoutCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "logout HOST",
		Short: "Log out of a registry: remove its credentials where Docker keeps them",
		Long: `logout removes the registry's credentials from $DOCKER_CONFIG/config.json
(~/.docker/config.json without it) or from the credential helper that holds
them, as docker logout does.`,
		Example: `  gpuimg logout registry.example.com`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(cmd.Flags()); err != nil {
				return err
			}
			file, removed, err := images.Logout(args[0], os.Getenv("DOCKER_CONFIG"))
			if err != nil {
				return invalid(err, "")
			}
			res := loginResult{Registry: args[0], ConfigFile: file, Removed: &removed}
			w := cmd.OutOrStdout()
			return render(w, output, res, func() error {
				if !removed {
					_, err := fmt.Fprintf(w, "not logged in to %s (%s)\n", args[0], file)
					return err
				}
				_, err := fmt.Fprintf(w, "Removed login credentials for %s (%s)\n", args[0], file)
				return err
			})
		},
	}
	outputFlag(cmd.Flags(), &output, "output", "text", "json")
	return cmd
}
