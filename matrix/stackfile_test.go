package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDecodeStack: each way a stack file can be wrong gets its own
// message, naming the file, in words (no Go types); good files decode.
func TestDecodeStack(t *testing.T) {
	tests := []struct {
		name, content string
		want          string // the whole error; "" when the file decodes
		prefix        bool   // want is the error's start (the rest lists Stack's keys, which grow)
		cuda          string // the decoded stack's CUDA when it decodes
	}{
		{name: "empty", content: "", want: "f: the file is empty"},
		{name: "white space only", content: " \n\t\n", want: "f: the file is empty"},
		{name: "json array", content: `[{"cuda": "12.2.2"}]`, want: "f: it holds a JSON array, not an object"},
		{name: "json truncated", content: `{"cuda": `, want: "f: not valid JSON at byte 9: unexpected end of JSON input"},
		{name: "json trailing comma", content: `{"cuda": "12.2.2",}`, want: "f: not valid JSON at byte 19: invalid character '}' looking for beginning of object key string"},
		{name: "json two objects", content: `{"cuda": "12.2.2"} {}`, want: "f: not valid JSON at byte 20: invalid character '{' after top-level value"},
		{name: "json number for a string", content: `{"cuda": 12}`, want: "f: field cuda is a JSON number, not a string"},
		{name: "json string for an object", content: `{"cuda": "12.2.2", "frameworks": "torch"}`, want: "f: field frameworks is a JSON string, not an object"},
		{name: "json string for a list", content: `{"cuda": "12.2.2", "gpu_archs": "sm_90"}`, want: "f: field gpu_archs is a JSON string, not a list"},
		{name: "json string for a bool", content: `{"cuda": "12.2.2", "system_cudnn": "yes"}`, want: "f: field system_cudnn is a JSON string, not true or false"},
		{name: "json nested field", content: `{"cuda": "12.2.2", "python_source": {"kind": 1}}`, want: "f: field python_source.kind is a JSON number, not a string"},
		{name: "json no cuda", content: `{}`, want: "f: no cuda field"},
		{name: "json empty cuda", content: `{"cuda": "", "python": "3.11"}`, want: "f: no cuda field"},
		{name: "json null is yaml", content: "null", want: "f: line 1: the file must be a mapping (key: value), not a scalar"},
		{name: "json unknown field is ignored", content: `{"cuda": "12.2.2", "added_later": true}`, cuda: "12.2.2"},
		{name: "json leading white space", content: "\n  {\"cuda\": \"12.4.1\"}\n", cuda: "12.4.1"},
		{name: "yaml", content: "cuda: 12.2.2\npython: \"3.11\"\n", cuda: "12.2.2"},
		{name: "yaml unknown key", content: "cuda: 12.2.2\ncdua: 12.4.1\n", want: `f: line 2: unknown key "cdua" in the file; known keys: base_image, base_image_eol, cuda, `, prefix: true},
		{name: "yaml list", content: "- cuda: 12.2.2\n", want: "f: line 1: the file must be a mapping (key: value), not a list"},
		{name: "yaml list for a string", content: "cuda: [12]\n", want: "f: line 1: cuda must be a single value, not a list"},
		{name: "yaml no cuda", content: "python: \"3.11\"\n", want: "f: no cuda field"},
		{name: "yaml second document", content: "cuda: 12.2.2\n---\ncuda: 12.4.1\n", want: "f: line 3: a second YAML document (after ---); gpuimg reads one document per file: merge the documents, or split them into files of their own"},
		{name: "yaml syntax", content: "cuda: \"12.2.2\n", want: "f: line 2: found unexpected end of stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := DecodeStack("f", []byte(tt.content))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.CUDA != tt.cuda {
					t.Errorf("cuda %q, want %q", s.CUDA, tt.cuda)
				}
				return
			}
			if err == nil {
				t.Fatalf("decoded %+v, want error %q", s, tt.want)
			}
			if got := err.Error(); got != tt.want && (!tt.prefix || !strings.HasPrefix(got, tt.want)) {
				t.Errorf("error\n got %q\nwant %q", got, tt.want)
			}
			if strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "matrix.") {
				t.Errorf("Go's types leak: %q", err)
			}
			if !reflect.DeepEqual(s, Stack{}) {
				t.Errorf("a failed decode returned %+v, want the zero Stack", s)
			}
		})
	}
}

// TestDecodeStackRoundTrip: what matrix resolve writes (-o json, -o yaml)
// reads back as the same stack.
func TestDecodeStackRoundTrip(t *testing.T) {
	s, err := builtin(t).Resolve(Constraints{Torch: cons("2.3")})
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for format, b := range map[string][]byte{"json": j, "yaml": y} {
		t.Run(format, func(t *testing.T) {
			got, err := DecodeStack("stack."+format, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Errorf("read back\n%+v\nwant\n%+v", got, s)
			}
		})
	}
}

// TestDecodeStackWrapsJSONErrors: the words are DecodeStack's, the cause
// stays encoding/json's for callers that branch on it.
func TestDecodeStackWrapsJSONErrors(t *testing.T) {
	_, err := DecodeStack("f", []byte(`{"cuda": `))
	if _, ok := errors.AsType[*json.SyntaxError](err); !ok {
		t.Errorf("%v does not wrap a *json.SyntaxError", err)
	}
	_, err = DecodeStack("f", []byte(`{"cuda": 12}`))
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); !ok || te.Field != "cuda" {
		t.Errorf("%v does not wrap the *json.UnmarshalTypeError of field cuda", err)
	}
}

// TestJSONProblem: each encoding/json error in words, also when wrapped;
// other errors unchanged.
func TestJSONProblem(t *testing.T) {
	type doc struct {
		S   string          `json:"s"`
		N   int             `json:"n"`
		F   float64         `json:"f"`
		B   bool            `json:"b"`
		L   []string        `json:"l"`
		A   [2]int          `json:"a"`
		M   map[string]int  `json:"m"`
		O   struct{ X int } `json:"o"`
		Ptr *struct {
			Y string `json:"y"`
		} `json:"ptr"`
	}
	decodeErr := func(s string) error {
		var d doc
		err := json.Unmarshal([]byte(s), &d)
		if err == nil {
			t.Fatalf("%s decoded", s)
		}
		return err
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"array", decodeErr(`[]`), "it holds a JSON array, not an object"},
		{"string", decodeErr(`"x"`), "it holds a JSON string, not an object"},
		{"number", decodeErr(`1`), "it holds a JSON number, not an object"},
		{"string field", decodeErr(`{"s": 1}`), "field s is a JSON number, not a string"},
		{"int field", decodeErr(`{"n": "1"}`), "field n is a JSON string, not a number"},
		{"fraction for an int", decodeErr(`{"n": 1.5}`), "field n is a JSON number 1.5, not a number"},
		{"float field", decodeErr(`{"f": true}`), "field f is a JSON bool, not a number"},
		{"bool field", decodeErr(`{"b": "true"}`), "field b is a JSON string, not true or false"},
		{"slice field", decodeErr(`{"l": {}}`), "field l is a JSON object, not a list"},
		{"array field", decodeErr(`{"a": "x"}`), "field a is a JSON string, not a list"},
		{"map field", decodeErr(`{"m": []}`), "field m is a JSON array, not an object"},
		{"struct field", decodeErr(`{"o": 1}`), "field o is a JSON number, not an object"},
		{"pointer field", decodeErr(`{"ptr": {"y": false}}`), "field ptr.y is a JSON bool, not a string"},
		{"syntax", decodeErr(`{"s" 1}`), `not valid JSON at byte 6: invalid character '1' after object key`},
		{"wrapped", fmt.Errorf("read report: %w", decodeErr(`[]`)), "it holds a JSON array, not an object"},
		{"other error", errors.New("read report.json: permission denied"), "read report.json: permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JSONProblem(tt.err); got != tt.want {
				t.Errorf("JSONProblem(%v)\n got %q\nwant %q", tt.err, got, tt.want)
			}
		})
	}
}
