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
// result format flag goes through here. A person's rendering is "text":
// "table" is its alias everywhere (formatAliases), given as either.
func outputFlag(fs *pflag.FlagSet, p *string, name string, formats ...string) {
	for i, f := range formats {
		formats[i] = canonicalFormat(f)
	}
	what := "output format: "
	if name != "output" {
		what = "result format on stdout: " // build's --output is BuildKit's
	}
	list := slices.Clone(formats)
	if i := slices.Index(list, "text"); i >= 0 {
		list[i] = "text (or table)"
	}
	usage := what + list[0]
	if n := len(list); n > 1 {
		usage = what + strings.Join(list[:n-1], ", ") + " or " + list[n-1]
	}
	*p = formats[0]
	fs.VarP((*formatValue)(p), name, "o", usage)
	_ = fs.SetAnnotation(name, formatsAnnotation, formats) // the flag exists: just bound
}

// formatAliases are the other names of formats: -o table is -o text.
var formatAliases = map[string]string{"table": "text"}

// canonicalFormat is format under its one name (formatAliases).
func canonicalFormat(format string) string {
	if c, ok := formatAliases[format]; ok {
		return c
	}
	return format
}

// formatValue is an output flag's value, held under its canonical name.
type formatValue string

func (v *formatValue) String() string { return string(*v) }
func (v *formatValue) Type() string   { return "string" }
func (v *formatValue) Set(s string) error {
	*v = formatValue(canonicalFormat(s))
	return nil
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

// writeCompactJSON writes v as JSON on one line, HTML characters as they
// are: what a GitHub Actions step output (name=VALUE, one line) holds.
func writeCompactJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
