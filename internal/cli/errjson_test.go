package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorObject: with -o json, or a machine format the command offers
// (yaml, github, bake, spdx-json), in any of pflag's spellings, before
// or after the flag at fault, every error prints one error object on
// stdout, and the plain line on stderr as before; with the text format,
// or a format the command refuses, stdout stays empty.
func TestErrorObject(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	badPublish := write("publish.yaml", "repository: r.example.com/t\ntag: \"{pytorch}\"\nmatrix: {torch: [\"2.7\"]}\n")
	badMatrix := write("matrix.yaml", "cuda: [\n")
	badStack := write("stack.json", "{\"cuda\": 5}\n")
	unreachable := "127.0.0.1:1/ml/torch" // nothing listens on port 1

	for _, tt := range []struct {
		name       string
		args       []string
		code       int
		file, flag string // the culprit the object names
		message    string // in the object's message
	}{
		{"unknown command", []string{"frob", "-o", "json"}, ExitInvalid, "", "", `unknown command "frob"`},
		{"unknown flag", []string{"matrix", "resolve", "--bogus", "-o", "json"}, ExitInvalid, "", "--bogus", "unknown flag: --bogus"},
		{"unknown flag, -o=json", []string{"matrix", "resolve", "--bogus", "--output=json"}, ExitInvalid, "", "--bogus", "unknown flag"},
		{"unknown flag, -ojson", []string{"matrix", "resolve", "-ojson", "--bogus"}, ExitInvalid, "", "--bogus", "unknown flag"},
		{"flag without its value", []string{"matrix", "resolve", "-o", "json", "--cuda"}, ExitInvalid, "", "--cuda", "flag needs an argument"},
		{"bad flag value", []string{"matrix", "resolve", "--cuda", "abc", "-o", "json"}, ExitInvalid, "", "--cuda", `version "abc"`},
		{"unknown target", []string{"matrix", "resolve", "--target", "nope", "-o", "json"}, ExitInvalid, "", "--target", `unknown target "nope"`},
		{"unknown GPU", []string{"matrix", "check", "--cuda", "12.2", "--gpu", "nope9000", "-o", "json"}, ExitInvalid, "", "--gpu", "nope9000"},
		{"bad stack file", []string{"matrix", "check", "--stack", badStack, "--driver", "535.104.05", "-o", "json"}, ExitInvalid, badStack, "", "cuda"},
		{"bad publish file", []string{"matrix", "expand", "-f", badPublish, "-o", "github"}, ExitInvalid, badPublish, "", "unknown field {pytorch}"},
		{"missing publish file", []string{"matrix", "expand", "-f", filepath.Join(dir, "none.yaml"), "-o", "json"}, ExitInvalid, "", "--file", "no such file"},
		{"bad publish file, json", []string{"matrix", "expand", "-f", badPublish, "-o", "json"}, ExitInvalid, badPublish, "", "line 2"},
		{"bad matrix file", []string{"matrix", "resolve", "--matrix-file", badMatrix, "--cuda", "12.2", "-o", "yaml"}, ExitInvalid, badMatrix, "", "line 1"},
		{"unreachable registry", []string{"images", "ls", unreachable, "--retries", "0", "-o", "json"}, ExitInvalid, "", "", "connection refused"},
		{"unreachable registry, validate", []string{"validate", unreachable + ":1", "--retries", "0", "-o", "json"}, ExitInvalid, "", "", "connection refused"},
		{"missing argument", []string{"images", "ls", "-o", "json"}, ExitInvalid, "", "", "accepts 1 arg(s), received 0"},
		{"required flag", []string{"verify", "r.example.com/ml/torch:1", "-o", "json"}, ExitInvalid, "", "--key", "--key is required"},
		{"bad platform", []string{"images", "copy", "--platform", "linux/", "oci:" + dir, "r.example.com/x:1", "-o", "json"}, ExitInvalid, "", "--platform", "os/arch"},
		{"missing layout", []string{"validate", "oci:" + filepath.Join(dir, "none"), "-o", "json"}, ExitInvalid, "", "", "no such file"},
		{"bad --copy of build", []string{"build", "--cuda", "12.2", "-o", "json", "--copy", "app"}, ExitInvalid, "", "--copy", "want SRC:DST"},
		{"sbom of a missing layout", []string{"sbom", "oci:" + filepath.Join(dir, "none"), "-o", "spdx-json"}, ExitInvalid, "", "", "no such file"},
		{"bad source of update", []string{"matrix", "update", "-o", "json", "--only", "bogus"}, ExitInvalid, "", "--only", "unknown upstream source"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			obj := decodeErrorObject(t, stdout)
			e := obj.Error
			if !strings.Contains(e.Message, tt.message) || e.Code != code || e.File != tt.file || e.Flag != tt.flag {
				t.Errorf("error object %+v, want message with %q, code %d, file %q, flag %q", e, tt.message, code, tt.file, tt.flag)
			}
			first, _, _ := strings.Cut(e.Message, "\n")
			if !strings.HasPrefix(stderr, "gpuimg: "+first) || (e.Hint != "" && !strings.Contains(stderr, e.Hint)) {
				t.Errorf("stderr is not the plain line of the object %+v:\n%s", e, stderr)
			}
		})
	}

	// Without a machine format nothing changes: stdout is empty.
	for _, args := range [][]string{
		{"matrix", "resolve", "--bogus"},
		{"matrix", "resolve", "--cuda", "12.2", "-o", "xml"},
		{"images", "ls", unreachable, "--retries", "0", "-o", "table"},
		{"validate", "oci:" + filepath.Join(dir, "none"), "-o", "junit"},
		{"build", "--cuda", "12.2", "--output", "json"}, // build's --output is BuildKit's, not the format
		{"matrix", "list", "cuda", "-o", "yaml"},        // a machine format the command lacks is refused in words
	} {
		if stdout, stderr, code := run(t, args...); code != ExitInvalid || stdout != "" || !strings.HasPrefix(stderr, "gpuimg: ") {
			t.Errorf("gpuimg %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, stdout, stderr)
		}
	}

	// A command that printed its result prints no error object after it:
	// a conflict's JSON is the result (exit 1).
	stdout, _, code := run(t, "matrix", "resolve", "--cuda", "11.8", "--torch", "2.9", "-o", "json")
	dec := json.NewDecoder(strings.NewReader(stdout))
	var v map[string]any
	if code != ExitFailed || dec.Decode(&v) != nil || dec.More() || v["alternatives"] == nil {
		t.Errorf("a conflict under -o json: exit %d, want one conflict object:\n%s", code, stdout)
	}
}

// decodeErrorObject reads stdout as exactly one error object.
func decodeErrorObject(t *testing.T, stdout string) ErrorObject {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	var obj ErrorObject
	if err := dec.Decode(&obj); err != nil {
		t.Fatalf("stdout is no error object: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one document:\n%s", stdout)
	}
	if obj.Error.Message == "" || obj.Error.Code == 0 || (obj.Error.File != "" && obj.Error.Flag != "") {
		t.Errorf("error object %+v: want a message, a code, and a file or a flag, not both", obj.Error)
	}
	checkJSONContract(t, "error object", "error.schema.json", stdout)
	var raw map[string]map[string]json.RawMessage
	must(t, json.Unmarshal([]byte(stdout), &raw))
	if _, ok := raw["error"]["hint"]; !ok || !bytes.HasSuffix([]byte(stdout), []byte("}\n")) {
		t.Errorf("error object lacks hint or its newline:\n%s", stdout)
	}
	return obj
}
