package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// A command's result goes to stdout in the format of its -o flag: the
// flag is bound by outputFlag, which records the formats the command
// has; checkFormat refuses any other before the command works; render
// writes the result (JSON, YAML, or the command's text or table).

// formatsAnnotation is the pflag annotation that lists an output flag's
// formats (outputFlag), for checkFormat and completion.
const formatsAnnotation = "gpuimg_formats"

// outputFlag binds -o (as --name) to p with formats, the first being the
// default; checkFormat accepts them and completion offers them. Every
// result format flag goes through here.
func outputFlag(fs *pflag.FlagSet, p *string, name string, formats ...string) {
	what := "output format: "
	if name != "output" {
		what = "result format on stdout: " // build's --output is BuildKit's
	}
	usage := what + formats[0]
	if n := len(formats); n > 1 {
		usage = what + strings.Join(formats[:n-1], ", ") + " or " + formats[n-1]
	}
	fs.StringVarP(p, name, "o", formats[0], usage)
	_ = fs.SetAnnotation(name, formatsAnnotation, formats) // the flag exists: just bound
}

// checkFormat refuses a value of fs's output flag (outputFlag) that is
// not one of its formats.
func checkFormat(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if formats := f.Annotations[formatsAnnotation]; len(formats) > 0 && err == nil {
			err = checkOutput(f.Value.String(), formats...)
		}
	})
	return err
}

// checkOutput refuses got when it is not one of allowed; the hint lists
// them as -o flags.
func checkOutput(got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	return invalid(fmt.Errorf("unknown output format %q", got), "use -o "+strings.Join(allowed, ", -o "))
}

// render writes a command's result v to w in format: indented JSON for
// json, YAML for yaml, else (text, table) what text writes. Formats a
// command has of its own (validate's junit, expand's github and bake)
// are rendered by the command.
func render(w io.Writer, format string, v any, text func() error) error {
	switch format {
	case "json":
		return writeJSON(w, v)
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	}
	return text()
}

// writeJSON writes v as indented JSON, HTML characters as they are.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
