package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// DecodeStack reads a stack file as gpuimg matrix resolve writes it: JSON
// (-o json) when its first byte past white space is { or [, else YAML
// (-o yaml), read by DecodeStrict. Errors start with name (the file's
// name, or "stdin") and say what is wrong in words, not in Go's types:
// an empty file, JSON that is not valid (at which byte) or not an object,
// a field of the wrong kind (JSONProblem), YAML's unknown keys and lines,
// and a stack without a cuda field. Unknown JSON fields are ignored, since
// Stack's JSON gains fields (a newer gpuimg's output still reads); YAML's
// unknown keys are errors, as in every YAML file gpuimg reads. A JSON
// error wraps encoding/json's, so errors.As finds *json.SyntaxError and
// *json.UnmarshalTypeError.
func DecodeStack(name string, b []byte) (Stack, error) {
	var s Stack
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return Stack{}, fmt.Errorf("%s: the file is empty", name)
	case t[0] == '{' || t[0] == '[':
		if err := json.Unmarshal(b, &s); err != nil {
			return Stack{}, fmt.Errorf("%s: %w", name, jsonError{err})
		}
	default:
		if err := DecodeStrict(name, b, &s); err != nil {
			return Stack{}, err
		}
	}
	if s.CUDA == "" {
		return Stack{}, fmt.Errorf("%s: no cuda field", name)
	}
	return s, nil
}

// jsonError is an encoding/json error that reads as JSONProblem says it.
type jsonError struct{ err error }

func (e jsonError) Error() string { return JSONProblem(e.err) }
func (e jsonError) Unwrap() error { return e.err }

// JSONProblem says what is wrong with a JSON document decoded into a
// struct, in words rather than Go's types: "it holds a JSON array, not an
// object", "field cuda is a JSON number, not a string", "not valid JSON
// at byte 9: …". Any other error is returned as its Error().
func JSONProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("it holds a JSON %s, not an object", te.Value)
	case errors.As(err, &te):
		return fmt.Sprintf("field %s is a JSON %s, not %s", te.Field, te.Value, jsonKind(te.Type))
	case errors.As(err, &se):
		return fmt.Sprintf("not valid JSON at byte %d: %v", se.Offset, se)
	}
	return err.Error()
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	}
	return "a number"
}
