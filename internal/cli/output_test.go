package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/spf13/pflag"
)

// TestOutputFlag: outputFlag's formats are the ones checkFormat accepts
// (the first the default; table and text are one format under two
// names, whichever the command was given), and render writes JSON, YAML
// or the command's text.
func TestOutputFlag(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		wantErr string
		want    string
	}{
		{args: nil, want: "text\n"},
		{args: []string{"-o", "table"}, want: "text\n"},
		{args: []string{"-o", "json"}, want: "{\n  \"a\": \"<b>\"\n}\n"},
		{args: []string{"-o", "yaml"}, want: "a: <b>\n"},
		{args: []string{"--output", "text"}, want: "text\n"},
		{args: []string{"-o", "xml"}, wantErr: `unknown output format "xml"; use -o text, -o json, -o yaml`},
		{args: []string{"--output", "github"}, wantErr: `unknown output format "github"; use -o text, -o json, -o yaml`},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		var format string
		outputFlag(fs, &format, "output", "table", "json", "yaml")
		fs.String("other", "", "a flag that is not an output flag")
		must(t, fs.Parse(tt.args))
		err := checkFormat(fs)
		if tt.wantErr != "" {
			var e *Error
			if err == nil || err.Error() != tt.wantErr || !errors.As(err, &e) || e.Code != ExitInvalid {
				t.Errorf("%q: error %v, want %q (exit %d)", tt.args, err, tt.wantErr, ExitInvalid)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		var b bytes.Buffer
		must(t, render(&b, format, map[string]string{"a": "<b>"}, func() error { _, err := b.WriteString("text\n"); return err }))
		if b.String() != tt.want {
			t.Errorf("%q: render wrote %q, want %q", tt.args, b.String(), tt.want)
		}
	}
}
