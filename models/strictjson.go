package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxJSONDepth bounds nesting, so a hostile file cannot recurse deeply.
const maxJSONDepth = 64

// CheckStrictJSON refuses what encoding/json accepts silently: data after
// the first value, and an object with the same key twice (the last one
// would win, so two readers of the file could disagree).
func CheckStrictJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkJSON(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the top-level value at offset %d", dec.InputOffset())
	}
	return nil
}

func walkJSON(dec *json.Decoder, path string, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("%s: nested deeper than %d", orTop(path), maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("unexpected end of JSON")
		}
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			k, _ := kt.(string)
			if seen[k] {
				return fmt.Errorf("key %q appears twice in %s", k, orTop(path))
			}
			seen[k] = true
			if err := walkJSON(dec, path+"."+k, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

func orTop(path string) string {
	if path == "" {
		return "the top-level object"
	}
	if path[0] == '.' {
		return path[1:]
	}
	return path
}
