package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The JSON contract (docs/output.md, "## JSON") checked on every -o json
// output the tests produce: it validates against its schema in
// docs/schemas (JSON Schema draft 2020-12, with
// github.com/santhosh-tekuri/jsonschema/v6: maintained, pure Go, passes
// the official JSON-Schema-Test-Suite for 2020-12, loads its
// meta-schemas from memory, so no test touches the network); gpuimg's
// own keys are snake_case; a list is [] when empty, never null.

const schemaDir = "../../docs/schemas"

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema
	schemasErr  error
)

// loadSchemas compiles every schema of docs/schemas once, each under its
// $id so that "stack.v1.schema.json" references resolve among them.
func loadSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	schemasOnce.Do(func() { schemas, schemasErr = compileSchemas() })
	if schemasErr != nil {
		t.Fatal(schemasErr)
	}
	return schemas
}

func compileSchemas() (map[string]*jsonschema.Schema, error) {
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.schema.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no schemas in %s", schemaDir)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // capture's date-time
	ids := map[string]string{}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		_ = r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if !strings.HasSuffix(id, "/"+filepath.Base(f)) {
			return nil, fmt.Errorf("%s: $id %q does not end in its file name", f, id)
		}
		if err := c.AddResource(id, doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		ids[filepath.Base(f)] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			return nil, fmt.Errorf("compile %s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

// checkJSONContract checks out, one JSON document, against the schema
// file names and the style rules.
func checkJSONContract(t *testing.T, what, schema, out string) {
	t.Helper()
	inst := checkSchema(t, what, schema, out)
	for _, p := range styleProblems(inst, "") {
		t.Errorf("%s: %s", what, p)
	}
}

// checkSchema checks out, one JSON document, against the schema file
// names in docs/schemas, and returns the document.
func checkSchema(t *testing.T, what, schema, out string) any {
	t.Helper()
	s, ok := loadSchemas(t)[schema]
	if !ok {
		t.Fatalf("%s: no schema %s in docs/schemas", what, schema)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%s: not JSON: %v\n%.500s", what, err, out)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not validate against docs/schemas/%s:\n%v", what, schema, err)
	}
	return inst
}

// specObjects are the keys whose value is a specification's own object,
// spelled as that specification spells it: an in-toto predicate (SLSA
// provenance and VSA, test results, SPDX, CycloneDX), OCI annotations
// and labels (reverse-DNS keys).
var specObjects = []string{"predicate", "vsa", "annotations", "labels"}

// nullable are gpuimg's keys whose null means "not known": a target's
// runtime contract, the cgroup CPU quota. Nothing else may be null, and
// no list ever is.
var nullable = []string{"runtime", "cpu_quota"}

// mapKeys are the keys whose value is a map with data as its keys
// (package names, axes, GPU names), not field names.
var mapKeys = []string{"clock_events", "frameworks", "packages", "axes", "sources", "missing", "kernels", "env", "versions", "by_gpu", "libraries", "digest", "version"}

var snakeCase = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)

// styleProblems walks v: every key of gpuimg's own objects is snake_case
// (keys of spec objects and of maps of data aside), and no value is null
// but a nullable key's.
func styleProblems(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		key := path[strings.LastIndex(path, ".")+1:]
		if i := strings.Index(key, "["); i >= 0 {
			key = key[:i]
		}
		if slices.Contains(specObjects, key) {
			return nil
		}
		data := slices.Contains(mapKeys, key)
		for k, e := range x {
			p := path + "." + k
			if !data && !snakeCase.MatchString(k) {
				out = append(out, fmt.Sprintf("key %s is not snake_case", p))
			}
			if e == nil && !slices.Contains(nullable, k) {
				out = append(out, fmt.Sprintf("%s is null (a list is [], and only %v may be null)", p, nullable))
			}
			out = append(out, styleProblems(e, p)...)
		}
	case []any:
		for i, e := range x {
			if e == nil {
				out = append(out, fmt.Sprintf("%s[%d] is null", path, i))
			}
			out = append(out, styleProblems(e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// goldenSchemas maps each golden output of -o json to its schema.
var goldenSchemas = map[string]string{
	"resolve-json":          "stack.v1.schema.json",
	"resolve-conflict-json": "conflict.schema.json",
	"check-json":            "check-report.schema.json",
	"check-fail-json":       "check-report.schema.json",
	"list-cuda-json":        "list-cuda.schema.json",
	"list-images-json":      "list-images.schema.json",
	"list-targets-json":     "list-targets.schema.json",
	"expand-json":           "plan.schema.json",
	"validate-json":         "validate-report.schema.json",
	"probe-judge-json":      "probe-judge.schema.json",
	"export-json":           "export-result.schema.json",
	"convert-json":          "convert-result.schema.json",
	"copy-dry-run-json":     "copy-result.schema.json",
	"ls-json":               "ls.schema.json",
}

// TestJSONContractGoldens checks every -o json output of the golden
// files (TestGoldenOutput keeps them current) against its schema and the
// style rules; a golden -o json output without a schema fails.
func TestJSONContractGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txt"))
	must(t, err)
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		must(t, err)
		cmdLine, rest, _ := strings.Cut(string(b), "\n")
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		stdout := between(rest, "-- stdout --\n", "-- stderr --\n")
		if !strings.Contains(cmdLine+" ", " -o json ") || !strings.HasPrefix(strings.TrimSpace(stdout), "{") && !strings.HasPrefix(strings.TrimSpace(stdout), "[") {
			continue
		}
		schema, ok := goldenSchemas[name]
		if !ok {
			schema = "error.schema.json" // a failed command's error object
			if !strings.Contains(stdout, `"error": {`) {
				t.Errorf("%s: -o json output without a schema: add it to goldenSchemas and docs/schemas", f)
				continue
			}
		}
		seen++
		// The golden files write durations as $SECONDS.
		checkJSONContract(t, f, schema, strings.ReplaceAll(stdout, "$SECONDS", "0.5"))
	}
	if seen < len(goldenSchemas) {
		t.Errorf("checked %d golden -o json outputs, want at least %d", seen, len(goldenSchemas))
	}
}

// between is the part of s after start and before end.
func between(s, start, end string) string {
	_, after, _ := strings.Cut(s, start)
	before, _, _ := strings.Cut(after, end)
	return before
}

// TestStyleProblems: the walk finds camelCase keys and null values in
// gpuimg's objects, and leaves specification objects and data maps be.
func TestStyleProblems(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want []string
	}{
		{`{"media_type": "x", "checks": []}`, nil},
		{`{"mediaType": "x"}`, []string{"key .mediaType is not snake_case"}},
		{`{"statements": [{"predicateType": "x"}]}`, []string{"key .statements[0].predicateType is not snake_case"}},
		{`{"changes": null}`, []string{"null"}},
		{`{"runtime": null}`, nil},
		{`{"statements": [{"predicate": {"passedTests": [], "x": null}}]}`, nil},
		{`{"vsa": {"timeVerified": "t"}, "annotations": {"org.opencontainers.image.created": "t"}}`, nil},
		{`{"frameworks": {"torch": {"index_url": "u"}}, "packages": {"nvidia-cudnn-cu12": "9"}}`, nil},
		{`{"frameworks": {"torch": {"indexURL": "u"}}}`, []string{"key .frameworks.torch.indexURL is not snake_case"}},
	} {
		var v any
		must(t, json.Unmarshal([]byte(tt.doc), &v))
		got := styleProblems(v, "")
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d problems %q", tt.doc, got, len(tt.want), tt.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tt.want[i]) {
				t.Errorf("%s: %q, want %q", tt.doc, got[i], tt.want[i])
			}
		}
	}
}

// TestJSONContractLive runs the -o json outputs the golden files do not
// hold (they need a signed image, a registry that deletes, a key) and
// checks each against its schema and the style rules.
func TestJSONContractLive(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref := host + "/ml/torch:2.3"
	gone := host + "/ml/torch:old"
	for _, r := range []string{ref, gone} {
		nr, err := name.ParseReference(r)
		must(t, err)
		must(t, remote.Write(nr, smallImage(t, "cuda>=12.2")))
	}
	dir := t.TempDir()
	key, pub := pemKeyPair(t, dir, "k")
	clean := layoutOf(t, [2]string{"etc/os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n"}, [2]string{"app/serve", "#!/bin/sh\n"})

	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		schema string
	}{
		{"promote refused", []string{"images", "promote", ref, "--to", "stable", "--require", "static", "-o", "json"}, ExitFailed, "promote-result.schema.json"},
		{"sign", []string{"sign", ref, "--key", key, "--signature-format", "both", "-o", "json"}, ExitOK, "sign-result.schema.json"},
		{"verify", []string{"verify", ref, "--key", pub, "-o", "json"}, ExitOK, "verify-result.schema.json"},
		{"validate --attach", []string{"validate", ref, "--attach", "--key", key, "-o", "json"}, ExitOK, "validate-report.schema.json"},
		{"verify a test result", []string{"verify", ref, "--key", pub, "--require", "signature,validation", "-o", "json"}, ExitOK, "verify-result.schema.json"},
		{"promote recorded", []string{"images", "promote", ref, "--to", "stable", "--require", "static", "--key", key, "-o", "json"}, ExitOK, "promote-result.schema.json"},
		{"rm", []string{"images", "rm", gone, "-o", "json"}, ExitOK, "rm-result.schema.json"},
		{"import", []string{"images", "import", "oci:" + clean, "--target", "runpod", "--to", host + "/runpod/model:v1", "--dry-run", "-o", "json"}, ExitOK, "import-result.schema.json"},
		{"builder status", []string{"builder", "status", "--state-dir", filepath.Join(dir, "state"), "-o", "json"}, ExitOK, "builder-status.schema.json"},
		{"publish", []string{"publish", "-f", filepath.Join("..", "..", "examples", "publish.yaml"), "--dry-run", "--progress", "quiet", "-o", "json"}, ExitOK, "publish-report.schema.json"},
		{"error", []string{"images", "rm", gone, "-o", "json"}, ExitInvalid, "error.schema.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.code, stdout, stderr)
			}
			checkJSONContract(t, "gpuimg "+strings.Join(tt.args, " "), tt.schema, stdout)
		})
	}
}
