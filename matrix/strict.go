package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yaml.v3's Node.Decode ignores unknown keys, and a typo in a team's matrix
// file ("min_drvier") must not be silently dropped. checkKeys walks the node
// tree beside the Go type and rejects keys the type does not have.
//
// The YAML library is go.yaml.in/yaml/v3, the YAML organisation's drop-in
// fork of the archived gopkg.in/yaml.v3. github.com/goccy/go-yaml (v1.19.2)
// was tried in its place, since its Strict option rejects unknown keys with
// a line: it would not make this file go away. Its unknown-field error names
// neither the row (cuda[]) nor the known keys that this file adds, errors
// returned by a field's own unmarshaler carry no line, the rows' positions
// (Row.At) still need a walk of the node tree, and its messages differ from
// the ones users see today ("did not find expected key", "field x not found"
// in gpuimg.yaml).

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

// DecodeStrict decodes the YAML document data into v, a pointer to a
// struct with yaml tags, the way matrix files are read: unknown keys (with
// the keys that are known), values of the wrong kind, errors returned by
// a field's own UnmarshalYAML and a second document after "---" are
// errors that start with name and name the line ("publish.yaml: line 3:
// unknown key ..."); every key and kind problem is found (Problems). An
// empty document leaves v as it is. Other gpuimg files (publish.yaml) use
// it so that every file gpuimg reads rejects typos the same way.
func DecodeStrict(name string, data []byte, v any) error {
	_, err := decodeStrict(name, data, v)
	return err
}

// decodeStrict is DecodeStrict returning the document's root node (nil for
// an empty document), for callers that read positions from it.
func decodeStrict(name string, data []byte, v any) (*yaml.Node, error) {
	docs, err := documents(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	root, err := oneDocument(name, docs)
	if err != nil || root == nil {
		return nil, err // nil, nil: an empty file
	}
	var errs []error
	if checkKeys(root, typeOf(v), "", &errs); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", name, Problems(errs))
	}
	if err := root.Decode(v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, typeErrors(err))
	}
	return root, nil
}

// OneDocument checks that the YAML in data holds at most one document
// that is not empty, for gpuimg's files read by other decoders
// (gpuimg.yaml): a reader of the first document drops the rest, so rows
// after a "---" would be silently ignored. The error starts with name and
// names the second document's line.
func OneDocument(name string, data []byte) error {
	docs, err := documents(data)
	if err != nil {
		return fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	_, err = oneDocument(name, docs)
	return err
}

// oneDocument returns the root node of the one document of docs that is
// not empty (nil if none), or an error naming a second one.
func oneDocument(name string, docs []*yaml.Node) (*yaml.Node, error) {
	var root *yaml.Node
	for _, d := range docs {
		switch {
		case emptyDocument(d):
		case root != nil:
			return nil, fmt.Errorf("%s: line %d: a second YAML document (after ---); gpuimg reads one document per file: merge the documents, or split them into files of their own", name, d.Content[0].Line)
		default:
			root = d.Content[0]
		}
	}
	return root, nil
}

// documents parses every YAML document of data.
func documents(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &d)
	}
}

// emptyDocument says whether d holds nothing: no node, or the null a
// bare "---" stands for.
func emptyDocument(d *yaml.Node) bool {
	if d.Kind == 0 || len(d.Content) == 0 {
		return true
	}
	n := d.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

func typeOf(v any) reflect.Type { return reflect.TypeOf(v).Elem() }

// yamlFields maps the YAML key of every field of struct type t, including
// fields of inlined structs, to that field's type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			maps.Copy(out, yamlFields(f.Type))
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// checkKeys appends to errs a problem for every key of n that type t does
// not have and every value of the wrong kind, with its line.
func checkKeys(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return // leaf types check themselves
	}
	switch t.Kind() {
	case reflect.Pointer:
		checkKeys(n, t.Elem(), path, errs)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s must be a mapping (key: value), not %s", n.Line, describe(path), kindName(n.Kind)))
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				known := make([]string, 0, len(fields))
				for name := range fields {
					known = append(known, name)
				}
				slices.Sort(known)
				*errs = append(*errs, fmt.Errorf("line %d: unknown key %q in %s; known keys: %s", k.Line, k.Value, describe(path), strings.Join(known, ", ")))
				continue
			}
			checkKeys(v, ft, joinPath(path, k.Value), errs)
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s must be a list, not %s", n.Line, describe(path), kindName(n.Kind)))
			return
		}
		for _, item := range n.Content {
			checkKeys(item, t.Elem(), path+"[]", errs)
		}
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		if n.Kind != yaml.ScalarNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s must be %s, not %s", n.Line, describe(path), scalarName(t.Kind()), kindName(n.Kind)))
			return
		}
		if k := t.Kind(); (k == reflect.Int || k == reflect.Int64 || k == reflect.Float64) && n.Tag == "!!str" {
			*errs = append(*errs, fmt.Errorf("line %d: %s must be %s, not %q", n.Line, describe(path), scalarName(k), n.Value))
		}
	}
}

func scalarName(k reflect.Kind) string {
	switch k {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	}
	return "a single value"
}

// maxProblems is how many problems a Problems error shows.
const maxProblems = 5

// Problems are the problems found in a file (or in the rows of several),
// each naming its line: Error shows the first few, one a line, and counts
// the rest; Unwrap gives them all.
type Problems []error

func (p Problems) Error() string {
	var b strings.Builder
	for i, e := range p {
		if i == maxProblems {
			fmt.Fprintf(&b, "\n… and %d more problems", len(p)-maxProblems)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns every problem.
func (p Problems) Unwrap() []error { return p }

// typeErrors turns the decoder's type errors (one line each) into
// Problems.
func typeErrors(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	p := make(Problems, 0, len(te.Errors))
	for _, e := range te.Errors {
		p = append(p, errors.New(strings.TrimPrefix(e, "yaml: ")))
	}
	return p
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// setPositions records the file and line of every top-level row.
func setPositions(f *File, root *yaml.Node, file string) {
	rv := reflect.ValueOf(f).Elem()
	byKey := map[string]int{}
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ",")
		byKey[name] = i
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, seq := root.Content[i], root.Content[i+1]
		idx, ok := byKey[k.Value]
		if !ok || seq.Kind != yaml.SequenceNode {
			continue
		}
		rows := rv.Field(idx)
		for j, item := range seq.Content {
			if j >= rows.Len() {
				break
			}
			at := rows.Index(j).FieldByName("At")
			if at.IsValid() && at.CanSet() {
				at.Set(reflect.ValueOf(Pos{File: file, Line: item.Line}))
			}
		}
	}
}
