package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
)

// MaxBodyBytes is the largest request body the API reads (docs/http-api.md: bodies over 64 KiB are rejected).
const MaxBodyBytes = 64 << 10

// readBody reads the whole body, at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, *Problem) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, newProblem(kindBodyTooLarge, fmt.Sprintf("the body is over %d bytes", MaxBodyBytes))
		}
		return nil, newProblem(kindInvalidBody, "reading the body: "+err.Error())
	}
	return body, nil
}

// decodeStrict decodes one JSON value into dst (a pointer to a struct): unknown fields — also ones that only
// differ in case from a known one, which encoding/json would accept — and trailing data are errors.
func decodeStrict(data []byte, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the body is empty")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	t := reflect.TypeOf(dst).Elem()
	if names := jsonNames(t); names != nil && keysAmong(data, names) {
		// Every key is exactly a field name of some level, and the decoder matched each, ignoring case, to a
		// field of its own level; lowercase ASCII names that differ never match ignoring case: exact.
		return nil
	}
	return exactFields(json.RawMessage(data), t, "")
}

// fieldNames caches jsonNames per type.
var fieldNames sync.Map // reflect.Type -> map[string]bool

// jsonNames returns the json names of the fields of struct type t and of the structs it holds, at any depth;
// nil when one is not lowercase ASCII (then only exactFields can tell).
func jsonNames(t reflect.Type) map[string]bool {
	if v, ok := fieldNames.Load(t); ok {
		return v.(map[string]bool)
	}
	names := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
				names[name] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	for name := range names {
		if strings.ToLower(name) != name || strings.IndexFunc(name, func(r rune) bool { return r >= 0x80 }) >= 0 {
			names = nil
			break
		}
	}
	fieldNames.Store(t, names)
	return names
}

// keysAmong reports whether every object key in the JSON text data is exactly one of names, by a scan that
// allocates nothing; false also when a key holds an escape (exactFields decides then).
func keysAmong(data []byte, names map[string]bool) bool {
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		start, escaped := i+1, false
		for i++; i < len(data) && data[i] != '"'; i++ {
			if data[i] == '\\' {
				escaped = true
				i++
			}
		}
		end := i
		j := i + 1
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == ':' && (escaped || !names[string(data[start:end])]) {
			return false
		}
	}
	return true
}

// exactFields checks that every object key in raw is exactly a json tag of the struct type t (recursively
// through slices and pointers).
func exactFields(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil // null, or a type error the decoder reported already
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = f.Type
			}
		}
		for k, v := range obj {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("json: unknown field %q", path+k)
			}
			if err := exactFields(v, ft, path+k+"."); err != nil {
				return err
			}
		}
	case reflect.Slice:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil
		}
		for i, item := range items {
			if err := exactFields(item, t.Elem(), fmt.Sprintf("%s[%d].", strings.TrimSuffix(path, "."), i)); err != nil {
				return err
			}
		}
	}
	return nil
}
