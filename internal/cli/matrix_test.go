package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/gpuimg/gpuimg/matrix"
)

// TestStackFlagsNameEveryField: every constraint the resolver can name in
// a conflict maps to a flag that StackOptions really registers.
func TestStackFlagsNameEveryField(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var so StackOptions
	so.AddFlags(fs, true)
	for _, f := range matrix.Fields() {
		name := f.Key()
		if fs.Lookup(name) == nil {
			t.Errorf("%s maps to --%s, which StackOptions does not register", f, name)
		}
	}
}

// TestConflictSpeaksFlags: the resolver names constraints by matrix.Field;
// the CLI renders them as the flags the user typed, in text and JSON.
func TestConflictSpeaksFlags(t *testing.T) {
	_, errOut, code := run(t, "matrix", "resolve", "--cuda", "11.7", "--torch", "2.3")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"\n  without --cuda 11.7: CUDA 11.8.0, torch 2.3.1 (CUDA 11.8)", "\n  without --torch 2.3: CUDA 11.7.1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, errOut, code := run(t, "matrix", "resolve", "--cuda", "11.7", "--torch", "2.3", "-o", "json")
	var v struct {
		Error        string `json:"error"`
		Alternatives []struct {
			Dropped string       `json:"dropped"`
			Stack   matrix.Stack `json:"stack"`
		} `json:"alternatives"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if len(v.Alternatives) != 2 || v.Alternatives[0].Dropped != "--cuda 11.7" || v.Alternatives[1].Dropped != "--torch 2.3" || v.Alternatives[0].Stack.CUDA != "11.8.0" {
		t.Errorf("alternatives %+v", v.Alternatives)
	}

	// No single drop works: the pairs that conflict on their own, as flags.
	args := []string{"matrix", "resolve", "--cuda", "12.1", "--tensorflow", "2.15", "--jax", "latest", "--python", "3.8"}
	_, errOut, _ = run(t, args...)
	for _, want := range []string{"; --cuda 12.1 and --tensorflow 2.15 conflict on their own", "; --jax * and --python 3.8 conflict on their own", "no stack works with any single constraint dropped"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	out, _, _ = run(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &v); err != nil || !strings.Contains(v.Error, "--cuda 12.1 and --tensorflow 2.15 conflict on their own") || v.Alternatives == nil || len(v.Alternatives) != 0 {
		t.Errorf("JSON %v: %s", err, out)
	}
}
