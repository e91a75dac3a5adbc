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
)

// MaxBodyBytes is the largest request body the API reads (API.md: bodies over 64 KiB are rejected).
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
	return exactFields(json.RawMessage(data), reflect.TypeOf(dst).Elem(), "")
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
