package boxfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/broker"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
)

var topSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "project"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "box", LabelNames: []string{"name"}},
		{Type: "drive", LabelNames: []string{"name"}},
		{Type: "policy", LabelNames: []string{"name"}},
		{Type: "secret", LabelNames: []string{"name"}},
		{Type: "image", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
	},
}

var boxSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "image"}, {Name: "ttl"}, {Name: "policy"}, {Name: "agent"},
		{Name: "env"}, {Name: "setup"}, {Name: "desktop"}, {Name: "files"}, {Name: "labels"}, {Name: "idle_stop"},
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "mount", LabelNames: []string{"drive"}},
		{Type: "push", LabelNames: []string{"local"}},
		{Type: "placement"},
	},
}

var placementSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "labels", Required: true}},
}

var mountSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "path"}, {Name: "readonly"}},
}

// bucketSchema is a mount block whose label is a bucket (s3://…).
var bucketSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "to", Required: true}, {Name: "read_only"}, {Name: "secret", Required: true}, {Name: "endpoint"}, {Name: "region"}},
}

var pushSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "to", Required: true}},
}

var driveSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "size"}, {Name: "labels"}},
}

var secretSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "broker", Required: true}, {Name: "header"}, {Name: "limit"}},
}

var imageSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "context"}, {Name: "dockerfile"}, {Name: "tag"}, {Name: "policy"}},
}

var policySchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "allow_domains"}, {Name: "allow_cidrs"}},
}

type decoder struct {
	cfg  *Config
	in   Inputs
	root string

	vars     map[string]cty.Value
	locals   map[string]cty.Value
	policies map[string]cty.Value
	drives   map[string]cty.Value
	images   map[string]cty.Value
	// declared names, for reference checks
	declared map[string]map[string]hcl.Range
	// funcs is made once per decode: building it for every expression was
	// most of the time spent on a large Boxfile.
	funcs map[string]function.Function
	// evalCtx is the context made from the values above; whatever changes
	// one of them sets it to nil.
	evalCtx *hcl.EvalContext
}

func errAt(r hcl.Range, summary, detail string) *hcl.Diagnostic {
	rr := r
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &rr}
}

func (d *decoder) decode(body hcl.Body) hcl.Diagnostics {
	d.funcs = functions(d.root, d.in.Environ, d.in.AllowEnv)
	content, diags := body.Content(topSchema)
	d.declared = map[string]map[string]hcl.Range{"var": {}, "local": {}, "policy": {}, "drive": {}, "box": {}, "secret": {}, "image": {}}

	// Names first, so that references can be checked wherever they are.
	for _, b := range content.Blocks {
		kind := b.Type
		switch kind {
		case "locals":
			attrs, ds := b.Body.JustAttributes()
			diags = append(diags, ds...)
			for name, a := range attrs {
				if prev, dup := d.declared["local"][name]; dup {
					diags = append(diags, errAt(a.NameRange, "Duplicate local value",
						fmt.Sprintf("local.%s was already defined at %s.", name, prev)))
					continue
				}
				d.declared["local"][name] = a.NameRange
			}
			continue
		case "variable":
			kind = "var"
		}
		name := b.Labels[0]
		if prev, dup := d.declared[kind][name]; dup {
			diags = append(diags, errAt(b.LabelRanges[0], fmt.Sprintf("Duplicate %s %q", b.Type, name),
				fmt.Sprintf("A %s named %q was already declared at %s.", b.Type, name, prev)))
			continue
		}
		d.declared[kind][name] = b.DefRange
		if kind == "secret" {
			if err := api.ValidEnvName(name); err != nil {
				diags = append(diags, errAt(b.LabelRanges[0], "Invalid secret name", "A secret is named as its environment variable (letters, digits and _): "+err.Error()))
			}
			d.cfg.Ranges[b.Type+"."+name] = b.DefRange
		} else if kind != "var" && kind != "local" {
			if err := api.ValidName(b.Type, name); err != nil {
				diags = append(diags, errAt(b.LabelRanges[0], "Invalid "+b.Type+" name", err.Error()))
			}
			d.cfg.Ranges[b.Type+"."+name] = b.DefRange
		}
	}

	if a, ok := content.Attributes["project"]; ok {
		v, ds := d.evalAs(a.Expr, cty.String, "project", nil)
		diags = append(diags, ds...)
		if !ds.HasErrors() && !v.IsNull() {
			p := v.AsString()
			if err := api.ValidName("project", p); err != nil {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid project name", err.Error()))
			}
			d.cfg.Spec.Project = p
		}
	}

	diags = append(diags, d.decodeVariables(content.Blocks)...)
	diags = append(diags, d.decodeLocals(content.Blocks)...)

	d.policies, d.drives, d.images = map[string]cty.Value{}, map[string]cty.Value{}, map[string]cty.Value{}
	d.evalCtx = nil
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		key := b.Type + "." + firstLabel(b)
		if (b.Type != "policy" && b.Type != "drive" && b.Type != "secret") || seen[key] {
			continue
		}
		seen[key] = true
		switch b.Type {
		case "secret":
			diags = append(diags, d.decodeSecret(b)...)
		case "policy":
			diags = append(diags, d.decodePolicy(b)...)
		case "drive":
			diags = append(diags, d.decodeDrive(b)...)
		}
	}
	// Images after policies (an image's builder has one); boxes after
	// images (a box's image may be one).
	for _, b := range content.Blocks {
		key := b.Type + "." + firstLabel(b)
		if b.Type == "image" && !seen[key] {
			seen[key] = true
			diags = append(diags, d.decodeImage(b)...)
		}
	}
	for _, b := range content.Blocks {
		key := b.Type + "." + firstLabel(b)
		if b.Type == "box" && !seen[key] {
			seen[key] = true
			diags = append(diags, d.decodeBox(b)...)
		}
	}
	sortSpec(&d.cfg.Spec)
	return diags
}

func firstLabel(b *hcl.Block) string {
	if len(b.Labels) > 0 {
		return b.Labels[0]
	}
	return ""
}

func sortSpec(s *api.ProjectSpec) {
	sort.Slice(s.Boxes, func(i, j int) bool { return s.Boxes[i].Name < s.Boxes[j].Name })
	sort.Slice(s.Drives, func(i, j int) bool { return s.Drives[i].Name < s.Drives[j].Name })
	sort.Slice(s.Policies, func(i, j int) bool { return s.Policies[i].Name < s.Policies[j].Name })
	sort.Slice(s.Secrets, func(i, j int) bool { return s.Secrets[i].Name < s.Secrets[j].Name })
	sort.Slice(s.Images, func(i, j int) bool { return s.Images[i].Name < s.Images[j].Name })
}

// checkRefs reports references to things that are not declared, and roots
// that may not be used in this place.
func (d *decoder) checkRefs(expr hcl.Expression, allowed []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		root := tr.RootName()
		ok := false
		for _, a := range allowed {
			if a == root {
				ok = true
			}
		}
		if !ok {
			diags = append(diags, errAt(tr.SourceRange(), "Invalid reference",
				fmt.Sprintf("%q cannot be referred to here; use %s.", root, strings.Join(allowed, ", "))))
			continue
		}
		if root == "path" {
			if len(tr) < 2 || attrName(tr[1]) != "root" {
				diags = append(diags, errAt(tr.SourceRange(), "Invalid reference", "The only path value is path.root."))
			}
			continue
		}
		if len(tr) < 2 {
			diags = append(diags, errAt(tr.SourceRange(), "Invalid reference",
				fmt.Sprintf("A reference to %s needs a name, as in %s.NAME.", root, root)))
			continue
		}
		name := attrName(tr[1])
		if _, ok := d.declared[root][name]; !ok {
			what := map[string]string{"var": "variable", "local": "local value", "policy": "policy", "drive": "drive", "image": "image"}[root]
			detail := fmt.Sprintf("No %s named %q is declared.", what, name)
			if s := suggest(name, keys(d.declared[root])); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			}
			diags = append(diags, errAt(tr.SourceRange(), "Reference to undeclared "+what, detail))
		}
	}
	return diags
}

func attrName(t hcl.Traverser) string {
	switch s := t.(type) {
	case hcl.TraverseAttr:
		return s.Name
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String {
			return s.Key.AsString()
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var allRefs = []string{"var", "local", "policy", "drive", "image", "path"}

func (d *decoder) ctx() *hcl.EvalContext {
	if d.evalCtx != nil {
		return d.evalCtx
	}
	obj := func(m map[string]cty.Value) cty.Value {
		if len(m) == 0 {
			return cty.EmptyObjectVal
		}
		return cty.ObjectVal(m)
	}
	d.evalCtx = &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":    obj(d.vars),
			"local":  obj(d.locals),
			"policy": obj(d.policies),
			"drive":  obj(d.drives),
			"image":  obj(d.images),
			"path":   cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(d.root)}),
		},
		Functions: d.funcs,
	}
	return d.evalCtx
}

// evalAs evaluates an expression and converts it to ty, reporting a wrong
// type at the expression. allowed limits the references (nil: all).
func (d *decoder) evalAs(expr hcl.Expression, ty cty.Type, what string, allowed []string) (cty.Value, hcl.Diagnostics) {
	if allowed == nil {
		allowed = allRefs
	}
	if diags := d.checkRefs(expr, allowed); diags.HasErrors() {
		return cty.NullVal(ty), diags
	}
	v, diags := expr.Value(d.ctx())
	if diags.HasErrors() {
		return cty.NullVal(ty), diags
	}
	if !v.IsWhollyKnown() {
		return cty.NullVal(ty), hcl.Diagnostics{errAt(expr.Range(), "Unknown value", what+" must be known when the Boxfile is read.")}
	}
	cv, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NullVal(ty), hcl.Diagnostics{errAt(expr.Range(), "Incorrect attribute value type",
			fmt.Sprintf("Inappropriate value for %s: %s required.", what, ty.FriendlyName()))}
	}
	if cv.IsNull() {
		return cv, nil
	}
	if ty.IsCollectionType() || ty.IsObjectType() {
		for it := cv.ElementIterator(); it.Next(); {
			if _, ev := it.Element(); ev.IsNull() {
				return cty.NullVal(ty), hcl.Diagnostics{errAt(expr.Range(), "Invalid value", what+" must not contain null.")}
			}
		}
	}
	return cv, nil
}

// decodeBucket reads a box's mount "s3://BUCKET/PREFIX" { to, secret,
// read_only, endpoint, region } block; paths are where the box's mounts
// so far are.
func (d *decoder) decodeBucket(mb *hcl.Block, box *api.BoxSpec, addr string, paths map[string]hcl.Range) hcl.Diagnostics {
	m := api.BucketMount{URL: mb.Labels[0]}
	if _, _, err := api.BucketOf(m.URL); err != nil {
		return hcl.Diagnostics{errAt(mb.LabelRanges[0], "Invalid bucket", err.Error())}
	}
	mc, diags := mb.Body.Content(bucketSchema)
	if diags.HasErrors() {
		return diags
	}
	var ta, sa, ea, ra *hcl.Attribute
	var ds hcl.Diagnostics
	m.To, ta, ds = d.str(mc.Attributes, "to", "to")
	diags = append(diags, ds...)
	m.Secret, sa, ds = d.str(mc.Attributes, "secret", "secret")
	diags = append(diags, ds...)
	m.Endpoint, ea, ds = d.str(mc.Attributes, "endpoint", "endpoint")
	diags = append(diags, ds...)
	m.Region, ra, ds = d.str(mc.Attributes, "region", "region")
	diags = append(diags, ds...)
	m.ReadOnly, ds = d.boolean(mc.Attributes, "read_only", "read_only")
	diags = append(diags, ds...)
	if diags.HasErrors() {
		return diags
	}
	// Each check's error at the attribute it is about.
	one := m
	for _, c := range []struct {
		a    *hcl.Attribute
		what string
		mod  func(*api.BucketMount)
	}{
		{ta, "Invalid mount path", func(x *api.BucketMount) { x.Secret, x.Endpoint, x.Region = "S", "", "" }},
		{sa, "Invalid secret name", func(x *api.BucketMount) { x.To, x.Endpoint, x.Region = "/data", "", "" }},
		{ea, "Invalid endpoint", func(x *api.BucketMount) { x.To, x.Secret, x.Region = "/data", "S", "" }},
		{ra, "Invalid region", func(x *api.BucketMount) { x.To, x.Secret, x.Endpoint = "/data", "S", "" }},
	} {
		x := one
		c.mod(&x)
		if err := api.ValidBucketMount(x); err != nil {
			return append(diags, errAt(c.a.Expr.Range(), c.what, apiMessage(err)))
		}
	}
	if prev, dup := paths[m.To]; dup {
		return append(diags, errAt(ta.Expr.Range(), "Duplicate mount path", fmt.Sprintf("%s is already mounted at %s.", m.To, prev)))
	}
	for p, prev := range paths {
		if strings.HasPrefix(p, m.To+"/") || strings.HasPrefix(m.To, p+"/") {
			return append(diags, errAt(ta.Expr.Range(), "Overlapping mount path", fmt.Sprintf("%s and %s (mounted at %s) are one inside the other.", m.To, p, prev)))
		}
	}
	paths[m.To] = ta.Expr.Range()
	d.cfg.Ranges[addr+".mount."+m.To] = mb.DefRange
	box.Buckets = append(box.Buckets, m)
	return diags
}

// apiMessage is an API error's message alone.
func apiMessage(err error) string {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

func (d *decoder) str(attrs hcl.Attributes, name, what string) (string, *hcl.Attribute, hcl.Diagnostics) {
	a, ok := attrs[name]
	if !ok {
		return "", nil, nil
	}
	v, diags := d.evalAs(a.Expr, cty.String, what, nil)
	if diags.HasErrors() || v.IsNull() {
		return "", a, diags
	}
	return v.AsString(), a, nil
}

func (d *decoder) strList(attrs hcl.Attributes, name, what string) ([]string, *hcl.Attribute, hcl.Diagnostics) {
	a, ok := attrs[name]
	if !ok {
		return nil, nil, nil
	}
	v, diags := d.evalAs(a.Expr, cty.List(cty.String), what, nil)
	if diags.HasErrors() || v.IsNull() {
		return nil, a, diags
	}
	var out []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		out = append(out, e.AsString())
	}
	return out, a, nil
}

func (d *decoder) strMap(attrs hcl.Attributes, name, what string) (map[string]string, *hcl.Attribute, hcl.Diagnostics) {
	a, ok := attrs[name]
	if !ok {
		return nil, nil, nil
	}
	v, diags := d.evalAs(a.Expr, cty.Map(cty.String), what, nil)
	if diags.HasErrors() || v.IsNull() {
		return nil, a, diags
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		out[k.AsString()] = e.AsString()
	}
	return out, a, nil
}

func (d *decoder) boolean(attrs hcl.Attributes, name, what string) (bool, hcl.Diagnostics) {
	a, ok := attrs[name]
	if !ok {
		return false, nil
	}
	v, diags := d.evalAs(a.Expr, cty.Bool, what, nil)
	if diags.HasErrors() || v.IsNull() {
		return false, diags
	}
	return v.True(), nil
}

// elemRange is the range of the i-th element of a list literal, or the
// whole expression when it is not a literal.
func elemRange(a *hcl.Attribute, i int) hcl.Range {
	if t, ok := a.Expr.(*hclsyntax.TupleConsExpr); ok && i < len(t.Exprs) {
		return t.Exprs[i].Range()
	}
	return a.Expr.Range()
}

func (d *decoder) decodePolicy(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	content, diags := b.Body.Content(policySchema)
	p := api.PolicySpec{Name: name}
	if name == api.PolicyAllowAll || name == api.PolicyDenyAll {
		diags = append(diags, errAt(b.LabelRanges[0], "Reserved policy name", fmt.Sprintf("%q is built in; give your policy another name.", name)))
	}
	domains, da, ds := d.strList(content.Attributes, "allow_domains", "allow_domains")
	diags = append(diags, ds...)
	for i, dom := range domains {
		if err := api.ValidDomainPattern(dom); err != nil {
			diags = append(diags, errAt(elemRange(da, i), "Invalid domain pattern", err.Error()))
		}
	}
	cidrs, ca, ds := d.strList(content.Attributes, "allow_cidrs", "allow_cidrs")
	diags = append(diags, ds...)
	for i, c := range cidrs {
		if err := api.ValidCIDR(c); err != nil {
			diags = append(diags, errAt(elemRange(ca, i), "Invalid CIDR", err.Error()))
		}
	}
	p.AllowDomains, p.AllowCIDRs = domains, cidrs
	d.cfg.Spec.Policies = append(d.cfg.Spec.Policies, p)
	d.policies[name] = cty.ObjectVal(map[string]cty.Value{
		"name":          cty.StringVal(name),
		"allow_domains": strListVal(domains),
		"allow_cidrs":   strListVal(cidrs),
	})
	d.evalCtx = nil
	return diags
}

// decodeSecret reads how a secret of the user who applies the Boxfile is
// brokered: the hosts its value may be sent to, the header it goes in,
// a rate per box. The value is never in a Boxfile ('paddock secret set').
func (d *decoder) decodeSecret(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	content, diags := b.Body.Content(secretSchema)
	hosts, ha, ds := d.strList(content.Attributes, "broker", "broker")
	diags = append(diags, ds...)
	if ha != nil && !ds.HasErrors() {
		if len(hosts) == 0 {
			diags = append(diags, errAt(ha.Expr.Range(), "No hosts", "Give the host(s) the secret may be sent to, such as [\"api.anthropic.com\"]."))
		}
		for i, h := range hosts {
			if err := broker.CheckHosts([]string{h}); err != nil {
				diags = append(diags, errAt(elemRange(ha, i), "Invalid host", err.Error()))
			}
		}
	}
	sec := api.SecretSpec{Name: name, Broker: api.SecretBroker{Hosts: hosts}}
	var a *hcl.Attribute
	sec.Broker.Header, a, ds = d.str(content.Attributes, "header", "header")
	diags = append(diags, ds...)
	if a != nil && !ds.HasErrors() {
		if _, err := broker.ParseHeader(sec.Broker.Header); err != nil {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid header", err.Error()))
		}
	}
	sec.Broker.Limit, a, ds = d.str(content.Attributes, "limit", "limit")
	diags = append(diags, ds...)
	if a != nil && !ds.HasErrors() {
		if _, err := broker.ParseLimit(sec.Broker.Limit); err != nil {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid limit", err.Error()))
		}
	}
	d.cfg.Spec.Secrets = append(d.cfg.Spec.Secrets, sec)
	return diags
}

// decodeImage reads an image block: image.NAME is then its "NAME:TAG",
// what a box's image names.
func (d *decoder) decodeImage(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	content, diags := b.Body.Content(imageSchema)
	im := api.ImageSpec{Name: name, Tag: "latest", Context: ".", Dockerfile: "Dockerfile"}
	for _, f := range []struct {
		attr string
		to   *string
	}{{"context", &im.Context}, {"dockerfile", &im.Dockerfile}, {"tag", &im.Tag}} {
		v, a, ds := d.str(content.Attributes, f.attr, f.attr)
		diags = append(diags, ds...)
		if a == nil || ds.HasErrors() {
			continue
		}
		d.cfg.Ranges["image."+name+"."+f.attr] = a.Expr.Range()
		switch f.attr {
		case "tag":
			if err := imagefmt.ValidTag(v); err != nil {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid tag", err.Error()))
			}
		case "context":
			// Inside the project directory only, as a push's source.
			switch fi, err := statInside(d.root, v); {
			case filepath.IsAbs(v):
				diags = append(diags, errAt(a.Expr.Range(), "Image context outside the project",
					fmt.Sprintf("%q is an absolute path: give the context folder relative to the Boxfile's directory (%s), as in \"./tools\".", v, d.root)))
			case errors.Is(err, fs.ErrNotExist):
				diags = append(diags, errAt(a.Expr.Range(), "Image context not found",
					fmt.Sprintf("%q does not exist here (a relative path starts at the Boxfile's directory, %s).", v, d.root)))
			case err != nil:
				diags = append(diags, errAt(a.Expr.Range(), "Image context outside the project",
					fmt.Sprintf("%q leads out of the project directory (%s): a Boxfile builds from inside it only.", v, d.root)))
			case !fi.IsDir():
				diags = append(diags, errAt(a.Expr.Range(), "Image context not a folder", fmt.Sprintf("%q is a file: give the folder the Dockerfile and its files are in.", v)))
			}
		case "dockerfile":
			if c := path.Clean(filepath.ToSlash(v)); path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid dockerfile", "Give the Dockerfile's path in the context folder, as in \"Dockerfile\"."))
			}
		}
		*f.to = v
	}
	if pa, ok := content.Attributes["policy"]; ok {
		d.cfg.Ranges["image."+name+".policy"] = pa.Expr.Range()
		p, ds := d.policyRef(pa)
		diags = append(diags, ds...)
		im.Policy = p
	}
	d.cfg.Spec.Images = append(d.cfg.Spec.Images, im)
	d.images[name] = cty.StringVal(im.Name + ":" + im.Tag)
	d.evalCtx = nil
	return diags
}

func strListVal(l []string) cty.Value {
	if len(l) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(l))
	for i, s := range l {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

var sizeRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

func (d *decoder) decodeDrive(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	content, diags := b.Body.Content(driveSchema)
	dr := api.DriveSpec{Name: name}
	size, sa, ds := d.str(content.Attributes, "size", "size")
	diags = append(diags, ds...)
	if size != "" && !sizeRE.MatchString(size) {
		diags = append(diags, errAt(sa.Expr.Range(), "Invalid size", fmt.Sprintf("Size %q: give a number and a unit, as in \"10GiB\".", size)))
	}
	labels, _, ds := d.strMap(content.Attributes, "labels", "labels")
	diags = append(diags, ds...)
	dr.Size, dr.Labels = size, labels
	d.cfg.Spec.Drives = append(d.cfg.Spec.Drives, dr)
	d.drives[name] = cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name)})
	d.evalCtx = nil
	return diags
}

func (d *decoder) decodeBox(b *hcl.Block) hcl.Diagnostics {
	name := b.Labels[0]
	addr := "box." + name
	content, diags := b.Body.Content(boxSchema)
	box := api.BoxSpec{Name: name}
	rng := func(a *hcl.Attribute, field string) {
		if a != nil {
			d.cfg.Ranges[addr+"."+field] = a.Expr.Range()
		}
	}

	typ, ta, ds := d.str(content.Attributes, "type", "type")
	diags = append(diags, ds...)
	rng(ta, "type")
	if typ != "" {
		if err := api.ValidType(typ); err != nil {
			detail := err.Error()
			if s := suggest(typ, api.BoxTypes); s != "" {
				detail += fmt.Sprintf(". Did you mean %q?", s)
			}
			diags = append(diags, errAt(ta.Expr.Range(), "Unknown box type", detail))
		}
	}
	box.Type = typ

	var a *hcl.Attribute
	box.Image, a, ds = d.str(content.Attributes, "image", "image")
	diags = append(diags, ds...)
	rng(a, "image")

	box.TTL, a, ds = d.str(content.Attributes, "ttl", "ttl")
	diags = append(diags, ds...)
	rng(a, "ttl")
	if box.TTL != "" {
		if _, err := api.ParseTTL(box.TTL); err != nil {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid duration", err.Error()))
		}
	}

	box.IdleStop, a, ds = d.str(content.Attributes, "idle_stop", "idle_stop")
	diags = append(diags, ds...)
	rng(a, "idle_stop")
	if box.IdleStop != "" {
		if _, err := api.ParseIdleStop(box.IdleStop); err != nil {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid idle stop", err.Error()))
		}
	}

	if pa, ok := content.Attributes["policy"]; ok {
		rng(pa, "policy")
		p, ds := d.policyRef(pa)
		diags = append(diags, ds...)
		box.Policy = p
	}

	box.Agent, a, ds = d.str(content.Attributes, "agent", "agent")
	diags = append(diags, ds...)
	rng(a, "agent")

	box.Env, a, ds = d.strMap(content.Attributes, "env", "env")
	diags = append(diags, ds...)
	rng(a, "env")
	for k := range box.Env {
		if err := api.ValidEnvName(k); err != nil {
			diags = append(diags, errAt(a.Expr.Range(), "Invalid environment variable name", err.Error()))
		}
	}

	box.Labels, a, ds = d.strMap(content.Attributes, "labels", "labels")
	diags = append(diags, ds...)
	rng(a, "labels")
	if a != nil {
		for _, k := range slices.Sorted(maps.Keys(box.Labels)) {
			if err := api.ValidNodeLabel(k, box.Labels[k]); err != nil {
				kr, _ := objectItemRanges(a.Expr, k)
				diags = append(diags, errAt(kr, "Invalid label", err.Error()))
			}
		}
	}

	box.Setup, a, ds = d.strList(content.Attributes, "setup", "setup")
	diags = append(diags, ds...)
	rng(a, "setup")

	if _, ok := content.Attributes["desktop"]; ok {
		var v bool
		v, ds = d.boolean(content.Attributes, "desktop", "desktop")
		diags = append(diags, ds...)
		box.Desktop = &v
	}

	paths := map[string]hcl.Range{}
	mounted := map[string]bool{}
	for _, mb := range content.Blocks {
		switch mb.Type {
		case "mount":
			if strings.Contains(mb.Labels[0], "://") {
				diags = append(diags, d.decodeBucket(mb, &box, addr, paths)...)
				continue
			}
			drive := mb.Labels[0]
			mc, ds := mb.Body.Content(mountSchema)
			diags = append(diags, ds...)
			if _, ok := d.declared["drive"][drive]; !ok {
				detail := fmt.Sprintf("No drive named %q is declared; add a drive %q {} block.", drive, drive)
				if s := suggest(drive, keys(d.declared["drive"])); s != "" {
					detail = fmt.Sprintf("No drive named %q is declared. Did you mean %q?", drive, s)
				}
				diags = append(diags, errAt(mb.LabelRanges[0], "Reference to undeclared drive", detail))
			}
			if mounted[drive] {
				diags = append(diags, errAt(mb.LabelRanges[0], "Duplicate mount", fmt.Sprintf("Drive %q is mounted twice in this box.", drive)))
			}
			mounted[drive] = true
			m := api.Mount{Drive: drive, Path: "/mnt/" + drive}
			p, pa, ds := d.str(mc.Attributes, "path", "path")
			diags = append(diags, ds...)
			if p != "" {
				m.Path = p
			}
			m.ReadOnly, ds = d.boolean(mc.Attributes, "readonly", "readonly")
			diags = append(diags, ds...)
			where := mb.DefRange
			if pa != nil {
				where = pa.Expr.Range()
			}
			if err := api.ValidMount(m); err != nil && api.ValidName("drive", drive) == nil {
				diags = append(diags, errAt(where, "Mount path outside /mnt", err.Error()))
			}
			if prev, dup := paths[m.Path]; dup {
				diags = append(diags, errAt(where, "Duplicate mount path", fmt.Sprintf("%s is already mounted at %s.", m.Path, prev)))
			}
			paths[m.Path] = where
			d.cfg.Ranges[addr+".mount."+drive] = where
			box.Mounts = append(box.Mounts, m)
		case "push":
			local := mb.Labels[0]
			pc, ds := mb.Body.Content(pushSchema)
			diags = append(diags, ds...)
			to, ta, ds := d.str(pc.Attributes, "to", "to")
			diags = append(diags, ds...)
			if ta != nil && !ds.HasErrors() {
				diags = append(diags, d.checkPush(local, mb.LabelRanges[0], to, ta.Expr.Range())...)
			}
			box.Push = append(box.Push, api.PushSpec{Local: local, To: to})
		case "placement":
			if box.NodeLabels != nil {
				diags = append(diags, errAt(mb.DefRange, "Duplicate placement block", "A box has one placement block."))
				continue
			}
			pc, ds := mb.Body.Content(placementSchema)
			diags = append(diags, ds...)
			labels, la, ds := d.strMap(pc.Attributes, "labels", "labels")
			diags = append(diags, ds...)
			if la != nil {
				for _, k := range slices.Sorted(maps.Keys(labels)) {
					if err := api.ValidNodeLabel(k, labels[k]); err != nil {
						kr, _ := objectItemRanges(la.Expr, k)
						diags = append(diags, errAt(kr, "Invalid node label", err.Error()))
					}
				}
				rng(la, "node_labels")
			}
			if labels == nil {
				labels = map[string]string{}
			}
			box.NodeLabels = labels
		}
	}
	// files = { LOCAL = "/box/dir" } says the same as push blocks.
	files, fa, ds := d.strMap(content.Attributes, "files", "files")
	diags = append(diags, ds...)
	for _, local := range slices.Sorted(maps.Keys(files)) {
		kr, vr := objectItemRanges(fa.Expr, local)
		diags = append(diags, d.checkPush(local, kr, files[local], vr)...)
		box.Push = append(box.Push, api.PushSpec{Local: local, To: files[local]})
	}
	d.cfg.Spec.Boxes = append(d.cfg.Spec.Boxes, box)
	return diags
}

// checkPush checks one push: the local path exists inside the project
// directory (relative to it; not absolute, not through ".." or a symlink
// out of it, so that a Boxfile from someone else's repository cannot push
// the user's ~/.ssh) and the target is a clean absolute path in the box.
func (d *decoder) checkPush(local string, lr hcl.Range, to string, tr hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	switch _, err := statInside(d.root, local); {
	case local == "":
		diags = append(diags, errAt(lr, "Empty push source", `Give a local path, such as "./src" (relative to the Boxfile's directory).`))
	case filepath.IsAbs(local):
		diags = append(diags, errAt(lr, "Push source outside the project",
			fmt.Sprintf("%q is an absolute path: a Boxfile pushes files from inside its project directory (%s) only.", local, d.root)))
	case errors.Is(err, fs.ErrNotExist):
		diags = append(diags, errAt(lr, "Push source not found",
			fmt.Sprintf("%q does not exist here (a relative path starts at the Boxfile's directory, %s).", local, d.root)))
	case err != nil:
		diags = append(diags, errAt(lr, "Push source outside the project",
			fmt.Sprintf("%q leads out of the project directory (%s): a Boxfile pushes files from inside it only.", local, d.root)))
	}
	if !path.IsAbs(to) || path.Clean(to) != to {
		diags = append(diags, errAt(tr, "Invalid push target", fmt.Sprintf("%q must be a clean absolute path in the box.", to)))
	}
	return diags
}

// objectItemRanges finds the key and value ranges of key in an object
// literal, or gives the whole expression's range for both.
func objectItemRanges(expr hcl.Expression, key string) (hcl.Range, hcl.Range) {
	if oc, ok := expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, it := range oc.Items {
			if k, diags := it.KeyExpr.Value(nil); !diags.HasErrors() && k.Type() == cty.String && k.AsString() == key {
				return it.KeyExpr.Range(), it.ValueExpr.Range()
			}
		}
	}
	return expr.Range(), expr.Range()
}

// policyRef reads a box's policy: "allow-all", "deny-all" or policy.NAME.
func (d *decoder) policyRef(a *hcl.Attribute) (string, hcl.Diagnostics) {
	if diags := d.checkRefs(a.Expr, allRefs); diags.HasErrors() {
		return "", diags
	}
	v, diags := a.Expr.Value(d.ctx())
	if diags.HasErrors() {
		return "", diags
	}
	bad := func() (string, hcl.Diagnostics) {
		return "", hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid policy",
			`Use "allow-all", "deny-all", or a reference to a declared policy such as policy.registries.`)}
	}
	switch {
	case v.IsNull() || !v.IsKnown():
		return bad()
	case v.Type() == cty.String:
		s := v.AsString()
		if s == api.PolicyAllowAll || s == api.PolicyDenyAll {
			return s, nil
		}
		if _, ok := d.declared["policy"][s]; ok {
			return "", hcl.Diagnostics{errAt(a.Expr.Range(), "Invalid policy",
				fmt.Sprintf("Refer to a declared policy without quotes: policy = policy.%s", s))}
		}
		return bad()
	case v.Type().IsObjectType() && v.Type().HasAttribute("name") && v.Type().HasAttribute("allow_domains"):
		return v.GetAttr("name").AsString(), nil
	}
	return bad()
}

// decodeVariables sets every declared variable from its default and the
// inputs, checks its type and runs its validations.
func (d *decoder) decodeVariables(blocks hcl.Blocks) hcl.Diagnostics {
	d.vars = map[string]cty.Value{}
	d.evalCtx = nil
	var diags hcl.Diagnostics
	inputs, ds := d.inputValues()
	diags = append(diags, ds...)
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.Type != "variable" || seen[b.Labels[0]] {
			continue
		}
		name := b.Labels[0]
		seen[name] = true
		v, ds := d.decodeVariable(b, inputs[name])
		diags = append(diags, ds...)
		d.vars[name] = v
		d.evalCtx = nil
	}
	for name, in := range inputs {
		if !seen[name] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("A value was given for variable %q (%s), but the Boxfile declares no such variable.", name, in.from)})
		}
	}
	return diags
}

func (d *decoder) decodeLocals(blocks hcl.Blocks) hcl.Diagnostics {
	d.locals = map[string]cty.Value{}
	d.evalCtx = nil
	attrs := map[string]*hcl.Attribute{}
	var names []string
	for _, b := range blocks {
		if b.Type != "locals" {
			continue
		}
		as, _ := b.Body.JustAttributes()
		for n, a := range as {
			if _, dup := attrs[n]; !dup {
				attrs[n] = a
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	var diags hcl.Diagnostics
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var visit func(name string, stack []string) bool
	visit = func(name string, stack []string) bool {
		switch state[name] {
		case 2:
			return true
		case 1:
			cycle := append(append([]string{}, stack[indexOf(stack, name):]...), name)
			for i := range cycle {
				cycle[i] = "local." + cycle[i]
			}
			diags = append(diags, errAt(attrs[name].NameRange, "Cycle in local values",
				"These local values refer to each other: "+strings.Join(cycle, " → ")+"."))
			return false
		}
		state[name] = 1
		ok := true
		for _, tr := range attrs[name].Expr.Variables() {
			if tr.RootName() == "local" && len(tr) > 1 {
				if dep := attrName(tr[1]); attrs[dep] != nil && !visit(dep, append(stack, name)) {
					ok = false
				}
			}
		}
		state[name] = 2
		if !ok {
			d.locals[name] = cty.DynamicVal
			d.evalCtx = nil
			return false
		}
		if ds := d.checkRefs(attrs[name].Expr, []string{"var", "local", "path"}); ds.HasErrors() {
			diags = append(diags, ds...)
			d.locals[name] = cty.DynamicVal
			d.evalCtx = nil
			return false
		}
		v, ds := attrs[name].Expr.Value(d.ctx())
		diags = append(diags, ds...)
		d.locals[name] = v
		d.evalCtx = nil
		return !ds.HasErrors()
	}
	for _, n := range names {
		visit(n, nil)
	}
	return diags
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return 0
}
