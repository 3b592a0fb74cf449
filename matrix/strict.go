package matrix

import (
	"fmt"
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
// the keys that are known), values of the wrong kind and errors returned by
// a field's own UnmarshalYAML are errors that start with name and name the
// line ("publish.yaml: line 3: unknown key ..."). An empty document leaves
// v as it is. Other gpuimg files (publish.yaml) use it so that every file
// gpuimg reads rejects typos the same way.
func DecodeStrict(name string, data []byte, v any) error {
	_, err := decodeStrict(name, data, v)
	return err
}

// decodeStrict is DecodeStrict returning the document's root node (nil for
// an empty document), for callers that read positions from it.
func decodeStrict(name string, data []byte, v any) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // empty file
	}
	root := doc.Content[0]
	if err := checkKeys(root, typeOf(v), ""); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := root.Decode(v); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return root, nil
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

func checkKeys(n *yaml.Node, t reflect.Type, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // leaf types check themselves
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkKeys(n, t.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: %s must be a mapping (key: value), not %s", n.Line, describe(path), kindName(n.Kind))
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
				return fmt.Errorf("line %d: unknown key %q in %s; known keys: %s", k.Line, k.Value, describe(path), strings.Join(known, ", "))
			}
			if err := checkKeys(v, ft, joinPath(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("line %d: %s must be a list, not %s", n.Line, describe(path), kindName(n.Kind))
		}
		for _, item := range n.Content {
			if err := checkKeys(item, t.Elem(), path+"[]"); err != nil {
				return err
			}
		}
	}
	return nil
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
