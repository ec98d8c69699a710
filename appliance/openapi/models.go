package openapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The SDKs' model types are generated from the document's schemas, so
// that they cannot drift from what the server sends: TypeScript gets an
// interface per schema, Python a TypedDict (standard library only). A test
// of the server compares the files in sdk/ with what these write.

const generatedNote = "Generated from paddockd's OpenAPI document by appliance/openapi; do not edit.\nRegenerate: go test ./appliance/server -run TestSDKModels -update"

// schemasOf reads components.schemas from a document's JSON.
func schemasOf(doc []byte) (map[string]map[string]any, []string, error) {
	var d struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	return d.Components.Schemas, names, nil
}

// properties are an object schema's fields in name order, each with
// whether it is required.
type property struct {
	name     string
	schema   map[string]any
	required bool
}

func properties(s map[string]any) []property {
	props, _ := s["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, n := range r {
			req[fmt.Sprint(n)] = true
		}
	}
	out := make([]property, 0, len(props))
	for n, p := range props {
		ps, _ := p.(map[string]any)
		out = append(out, property{n, ps, req[n]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// kinds reads a schema's type: one name or a list of them.
func kinds(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, k := range t {
			out = append(out, fmt.Sprint(k))
		}
		return out
	}
	return nil
}

func refName(s map[string]any) (string, bool) {
	r, ok := s["$ref"].(string)
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(r, "#/components/schemas/"), true
}

// TypeScript is the models file of the TypeScript SDK.
func TypeScript(doc []byte) ([]byte, error) {
	schemas, names, err := schemasOf(doc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("// " + strings.ReplaceAll(generatedNote, "\n", "\n// ") + "\n")
	for _, n := range names {
		s := schemas[n]
		if kinds(s) == nil || kinds(s)[0] != "object" {
			fmt.Fprintf(&b, "\nexport type %s = %s;\n", n, tsType(s))
			continue
		}
		fmt.Fprintf(&b, "\nexport interface %s {\n", n)
		for _, p := range properties(s) {
			opt := "?"
			if p.required {
				opt = ""
			}
			fmt.Fprintf(&b, "  %s%s: %s;\n", p.name, opt, tsType(p.schema))
		}
		b.WriteString("}\n")
	}
	return []byte(b.String()), nil
}

func tsType(s map[string]any) string {
	if n, ok := refName(s); ok {
		return n
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			as, _ := a.(map[string]any)
			parts = append(parts, tsType(as))
		}
		return strings.Join(parts, " | ")
	}
	ks := kinds(s)
	if len(ks) == 0 {
		return "unknown"
	}
	var parts []string
	for _, k := range ks {
		switch k {
		case "string":
			parts = append(parts, "string")
		case "integer", "number":
			parts = append(parts, "number")
		case "boolean":
			parts = append(parts, "boolean")
		case "null":
			parts = append(parts, "null")
		case "array":
			items, _ := s["items"].(map[string]any)
			t := tsType(items)
			if strings.ContainsAny(t, " |{") {
				t = "(" + t + ")"
			}
			parts = append(parts, t+"[]")
		case "object":
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				parts = append(parts, "Record<string, "+tsType(ap)+">")
				continue
			}
			var fields []string
			for _, p := range properties(s) {
				opt := "?"
				if p.required {
					opt = ""
				}
				fields = append(fields, p.name+opt+": "+tsType(p.schema))
			}
			parts = append(parts, "{ "+strings.Join(fields, "; ")+" }")
		default:
			parts = append(parts, "unknown")
		}
	}
	return strings.Join(parts, " | ")
}

// Python is the models module of the Python SDK: a TypedDict per schema,
// its required keys in a base class and the others in a total=False one
// (the form Python 3.9 reads).
func Python(doc []byte) ([]byte, error) {
	schemas, names, err := schemasOf(doc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("\"\"\"The API's models. " + generatedNote + "\n\"\"\"\n\n")
	b.WriteString("from typing import Any, Dict, List, Optional, TypedDict\n\n__all__ = [")
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", n)
	}
	b.WriteString("]\n")
	for _, n := range names {
		s := schemas[n]
		if kinds(s) == nil || kinds(s)[0] != "object" {
			fmt.Fprintf(&b, "\n\n%s = %s\n", n, pyType(s))
			continue
		}
		var req, opt []property
		for _, p := range properties(s) {
			if p.required {
				req = append(req, p)
			} else {
				opt = append(opt, p)
			}
		}
		// The functional form: a field may be a Python keyword ("from").
		dict := func(name string, ps []property, total string) {
			fmt.Fprintf(&b, "%s = TypedDict(%q, {", name, name)
			for i, p := range ps {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q: %q", p.name, pyType(p.schema))
			}
			fmt.Fprintf(&b, "}%s)\n", total)
		}
		b.WriteString("\n\n")
		switch {
		case len(opt) == 0:
			dict(n, req, "")
		case len(req) == 0:
			dict(n, opt, ", total=False")
		default:
			dict("_"+n+"Required", req, "")
			dict("_"+n+"Optional", opt, ", total=False")
			fmt.Fprintf(&b, "\n\nclass %s(_%sRequired, _%sOptional):\n    pass\n", n, n, n)
		}
	}
	return []byte(b.String()), nil
}

// pyType is a type annotation, written as a string in the module so that
// the order of the models does not matter.
func pyType(s map[string]any) string {
	if n, ok := refName(s); ok {
		return n
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var inner []string
		null := false
		for _, a := range alts {
			as, _ := a.(map[string]any)
			if ks := kinds(as); len(ks) == 1 && ks[0] == "null" {
				null = true
				continue
			}
			inner = append(inner, pyType(as))
		}
		t := "Any"
		if len(inner) == 1 {
			t = inner[0]
		}
		if null && t != "Any" {
			return "Optional[" + t + "]"
		}
		return t
	}
	ks := kinds(s)
	null := false
	var t string
	for _, k := range ks {
		switch k {
		case "null":
			null = true
		case "string":
			t = "str"
		case "integer":
			t = "int"
		case "number":
			t = "float"
		case "boolean":
			t = "bool"
		case "array":
			items, _ := s["items"].(map[string]any)
			t = "List[" + pyType(items) + "]"
		case "object":
			if ap, ok := s["additionalProperties"].(map[string]any); ok {
				t = "Dict[str, " + pyType(ap) + "]"
			} else {
				t = "Dict[str, Any]"
			}
		}
	}
	if t == "" {
		return "Any"
	}
	if null {
		return "Optional[" + t + "]"
	}
	return t
}
