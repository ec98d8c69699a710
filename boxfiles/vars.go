package boxfiles

import (
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// input is a value given for a variable from outside the Boxfile: raw text
// (from -var or the environment, read as a string or, for other types, as
// an HCL expression) or a value from a -var-file.
type input struct {
	raw   string
	val   cty.Value
	isRaw bool
	from  string
	rng   *hcl.Range
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "condition", Required: true}, {Name: "error_message", Required: true}},
}

func (d *decoder) inputValues() (map[string]input, hcl.Diagnostics) {
	out := map[string]input{}
	var diags hcl.Diagnostics
	for _, e := range d.in.Environ {
		k, v, ok := strings.Cut(e, "=")
		if name, ok2 := strings.CutPrefix(k, "PADDOCK_VAR_"); ok && ok2 && name != "" {
			out[name] = input{raw: v, isRaw: true, from: "environment variable " + k}
		}
	}
	for _, f := range d.in.VarFiles {
		src, err := os.ReadFile(f)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read variables file", Detail: err.Error()})
			continue
		}
		file, ds := hclparse.NewParser().ParseHCL(src, f)
		diags = append(diags, ds...)
		if file == nil {
			continue
		}
		d.cfg.Files[f] = file
		attrs, ds := file.Body.JustAttributes()
		diags = append(diags, ds...)
		for name, a := range attrs {
			v, ds := a.Expr.Value(nil)
			diags = append(diags, ds...)
			r := a.Expr.Range()
			out[name] = input{val: v, from: "file " + f, rng: &r}
		}
	}
	for _, kv := range d.in.Vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
				Detail: fmt.Sprintf("The option %q is not of the form NAME=VALUE.", kv)})
			continue
		}
		out[k] = input{raw: v, isRaw: true, from: "-var " + k}
	}
	return out, diags
}

func (d *decoder) decodeVariable(b *hcl.Block, in input) (cty.Value, hcl.Diagnostics) {
	name := b.Labels[0]
	content, diags := b.Body.Content(variableSchema)
	ty := cty.DynamicPseudoType
	if a, ok := content.Attributes["type"]; ok {
		t, ds := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, ds...)
		if !ds.HasErrors() {
			ty = t
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		if _, ds := a.Expr.Value(nil); ds.HasErrors() {
			diags = append(diags, ds...)
		}
	}
	var val cty.Value
	var where hcl.Range
	switch {
	case in.from != "" && in.isRaw:
		if ty == cty.String || ty == cty.DynamicPseudoType {
			val = cty.StringVal(in.raw)
		} else {
			expr, ds := hclsyntax.ParseExpression([]byte(in.raw), in.from, hcl.InitialPos)
			if ds.HasErrors() {
				return cty.DynamicVal, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
					Detail: fmt.Sprintf("The value of variable %q from %s is not a valid %s.", name, in.from, ty.FriendlyName())})
			}
			v, ds := expr.Value(nil)
			if ds.HasErrors() {
				return cty.DynamicVal, append(diags, ds...)
			}
			val = v
		}
		where = b.DefRange
	case in.from != "":
		val = in.val
		where = *in.rng
	default:
		a, ok := content.Attributes["default"]
		if !ok {
			return cty.DynamicVal, append(diags, errAt(b.DefRange, "No value for required variable",
				fmt.Sprintf("Variable %q has no default; set it with -var %s=VALUE, -var-file or PADDOCK_VAR_%s.", name, name, name)))
		}
		v, ds := a.Expr.Value(nil)
		if ds.HasErrors() {
			return cty.DynamicVal, append(diags, ds...)
		}
		val, where = v, a.Expr.Range()
	}
	cv, err := convert.Convert(val, ty)
	if err != nil {
		return cty.DynamicVal, append(diags, errAt(where, "Invalid value for variable",
			fmt.Sprintf("Variable %q must be %s: %s.", name, ty.FriendlyName(), err)))
	}
	// Validations see the variable's own value.
	for _, vb := range content.Blocks {
		vc, ds := vb.Body.Content(validationSchema)
		diags = append(diags, ds...)
		if ds.HasErrors() {
			continue
		}
		cond, msg := vc.Attributes["condition"], vc.Attributes["error_message"]
		for _, tr := range cond.Expr.Variables() {
			if tr.RootName() != "var" || len(tr) < 2 || attrName(tr[1]) != name {
				diags = append(diags, errAt(tr.SourceRange(), "Invalid reference in validation",
					fmt.Sprintf("A validation of variable %q may refer only to var.%s.", name, name)))
			}
		}
		if diags.HasErrors() {
			continue
		}
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{name: cv})},
			Functions: functions(d.root, d.in.Environ, d.in.AllowEnv),
		}
		ok, ds := cond.Expr.Value(ctx)
		diags = append(diags, ds...)
		if ds.HasErrors() {
			continue
		}
		ok, err := convert.Convert(ok, cty.Bool)
		if err != nil || ok.IsNull() {
			diags = append(diags, errAt(cond.Expr.Range(), "Invalid validation condition", "The condition must be true or false."))
			continue
		}
		if ok.False() {
			m, ds := msg.Expr.Value(nil)
			text := "The value is not valid."
			if !ds.HasErrors() && m.Type() == cty.String && !m.IsNull() {
				text = m.AsString()
			}
			diags = append(diags, errAt(where, "Invalid value for variable",
				fmt.Sprintf("%s\n\nThis was checked by the validation rule at %s.", text, cond.Expr.Range())))
		}
	}
	return cv, diags
}
