package dashboard

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The API reference page renders the server's OpenAPI document: each
// operation by tag, then each type, all from the same document that
// /v1/openapi.json serves (nothing from elsewhere).

type apiRef struct {
	Groups []apiGroup
	Types  []apiType
}

type apiGroup struct {
	Tag string
	Ops []apiOp
}

type apiOp struct {
	ID, Method, Path, Summary, Notes, Request, Response, Status string
	Query                                                       []apiParam
}

type apiParam struct{ Name, Description string }

type apiType struct {
	Name   string
	Fields []apiField
}

type apiField struct {
	Name, Type string
	Required   bool
}

type oaSchema struct {
	Ref        string              `json:"$ref"`
	Type       any                 `json:"type"`
	Items      *oaSchema           `json:"items"`
	Props      map[string]oaSchema `json:"properties"`
	Required   []string            `json:"required"`
	Additional any                 `json:"additionalProperties"`
	AnyOf      []oaSchema          `json:"anyOf"`
	Format     string              `json:"format"`
	Media      string              `json:"contentMediaType"`
}

type oaContent map[string]struct {
	Schema oaSchema `json:"schema"`
}

type oaOp struct {
	Summary     string   `json:"summary"`
	Description string   `json:"description"`
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
	Parameters  []struct {
		Name, In, Description string
	} `json:"parameters"`
	RequestBody *struct {
		Content oaContent `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Description string    `json:"description"`
		Content     oaContent `json:"content"`
	} `json:"responses"`
}

// describe says a schema in a few words: a type name, "list of Box".
func describe(s oaSchema) string {
	switch {
	case s.Ref != "":
		return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
	case len(s.AnyOf) > 0:
		return describe(s.AnyOf[0]) + " or null"
	case s.Items != nil:
		return "list of " + describe(*s.Items)
	case s.Media != "":
		return s.Media
	case s.Format != "":
		return s.Format
	}
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if t[0] == "object" {
				if a, ok := s.Additional.(map[string]any); ok {
					if at, ok := a["type"].(string); ok {
						return "map of " + at
					}
				}
				return "object"
			}
			return fmt.Sprint(t[0])
		}
	}
	return "any"
}

func contentWords(c oaContent) string {
	var out []string
	for media, v := range c {
		if media == "application/json" {
			out = append(out, "JSON "+describe(v.Schema))
		} else {
			out = append(out, media)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func buildAPIRef(doc []byte) (apiRef, error) {
	var d struct {
		Paths      map[string]map[string]oaOp `json:"paths"`
		Components struct {
			Schemas map[string]oaSchema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return apiRef{}, err
	}
	groups := map[string][]apiOp{}
	for path, methods := range d.Paths {
		for method, o := range methods {
			op := apiOp{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Summary: o.Summary, Notes: o.Description}
			for _, p := range o.Parameters {
				if p.In == "query" {
					op.Query = append(op.Query, apiParam{p.Name, p.Description})
				}
			}
			if o.RequestBody != nil {
				op.Request = contentWords(o.RequestBody.Content)
			}
			for code, r := range o.Responses {
				if code == "default" {
					continue
				}
				op.Status = code + " " + r.Description
				op.Response = contentWords(r.Content)
			}
			tag := "other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			groups[tag] = append(groups[tag], op)
		}
	}
	var ref apiRef
	for tag, ops := range groups {
		sort.Slice(ops, func(i, j int) bool {
			if ops[i].Path != ops[j].Path {
				return ops[i].Path < ops[j].Path
			}
			return ops[i].Method < ops[j].Method
		})
		ref.Groups = append(ref.Groups, apiGroup{Tag: tag, Ops: ops})
	}
	sort.Slice(ref.Groups, func(i, j int) bool { return ref.Groups[i].Tag < ref.Groups[j].Tag })
	for name, s := range d.Components.Schemas {
		t := apiType{Name: name}
		req := map[string]bool{}
		for _, r := range s.Required {
			req[r] = true
		}
		for f, fs := range s.Props {
			t.Fields = append(t.Fields, apiField{Name: f, Type: describe(fs), Required: req[f]})
		}
		sort.Slice(t.Fields, func(i, j int) bool { return t.Fields[i].Name < t.Fields[j].Name })
		ref.Types = append(ref.Types, t)
	}
	sort.Slice(ref.Types, func(i, j int) bool { return ref.Types[i].Name < ref.Types[j].Name })
	return ref, nil
}

// apiPage needs the document: the server sets APIDoc.
func (p *Pages) apiRef() (apiRef, error) {
	if p.APIDoc == nil {
		return apiRef{}, fmt.Errorf("no API document")
	}
	doc, err := p.APIDoc()
	if err != nil {
		return apiRef{}, err
	}
	return buildAPIRef(doc)
}
