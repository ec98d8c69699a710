package project

import (
	"context"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
)

// projectImages makes the images a project's boxes name what the engine
// calls them: a box's image that is one of the project's own image blocks
// (NAME:TAG), or one of the user's images the user may use, becomes its
// engine name, which is what the box is stored with (so that a plan
// compares like with like). The server's images stay as they are. It
// returns the engine names it gave, each true when the project builds it
// (read before any transaction: checkImages, within one, reads no store).
func (pr *Projects) projectImages(ctx context.Context, spec *api.ProjectSpec) map[string]bool {
	refs := map[string]bool{}
	u, _ := caller.From(ctx)
	uname, err := pr.core.UserName(caller.OwnerID(ctx))
	if err != nil {
		return refs
	}
	declared := map[string]bool{}
	for _, im := range spec.Images {
		declared[im.Name+":"+im.Tag] = true
	}
	spec.Boxes = slices.Clone(spec.Boxes) // the caller's spec stays as it was
	for i, b := range spec.Boxes {
		if b.Image == "" || pr.core.AllowedImage(b.Image) {
			continue
		}
		owner, name, tag := imagefmt.SplitRef(b.Image)
		if owner == "" && declared[name+":"+tag] {
			spec.Boxes[i].Image = pr.core.EngineRef(imagefmt.Ref(uname, name, tag))
			refs[spec.Boxes[i].Image] = true
			continue
		}
		if im, err := pr.core.UsableImage(ctx, u, b.Image); err == nil {
			spec.Boxes[i].Image = pr.core.ImageRef(im)
			refs[spec.Boxes[i].Image] = false
		}
	}
	return refs
}

// planImages is what a project's image blocks change: an image not built
// yet (create), or one whose last build had another context or Dockerfile
// (update). The CLI builds them before it applies the rest.
func (pr *Projects) planImages(ctx context.Context, spec api.ProjectSpec) []api.Change {
	var out []api.Change
	for _, im := range spec.Images {
		addr := "image." + im.Name
		cur, err := pr.store.GetImage(caller.OwnerID(ctx), im.Name, im.Tag)
		if err != nil {
			out = append(out, api.Change{Address: addr, Action: api.ActionCreate,
				Attrs: []api.AttrChange{{Name: "tag", After: strconv.Quote(im.Tag)}, {Name: "context", After: strconv.Quote(im.Context)}}})
			continue
		}
		var attrs []api.AttrChange
		if cur.ContextDigest != im.ContextDigest {
			attrs = append(attrs, api.AttrChange{Name: "context_digest", Before: strconv.Quote(imagefmt.Short(cur.ContextDigest)), After: strconv.Quote(imagefmt.Short(im.ContextDigest))})
		}
		if df := path.Clean(im.Dockerfile); cur.Dockerfile != df {
			attrs = append(attrs, api.AttrChange{Name: "dockerfile", Before: strconv.Quote(cur.Dockerfile), After: strconv.Quote(df)})
		}
		if len(attrs) > 0 {
			out = append(out, api.Change{Address: addr, Action: api.ActionUpdate, Attrs: attrs})
		}
	}
	return out
}

// projectImage is checkImage for a project's box: one of the server's
// images, or a user's image that projectImages resolved (refs) and the
// engine has; an image the project builds need not be there yet when only
// planning. It reads no store (it runs within an apply's transaction).
func (pr *Projects) projectImage(ctx context.Context, ref string, refs map[string]bool, applying bool) error {
	if pr.core.AllowedImage(ref) {
		return pr.core.CheckImage(ctx, ref)
	}
	builds, ok := refs[ref]
	if !ok {
		return pr.core.NoImage(ref)
	}
	if builds && !applying {
		return nil
	}
	shown := strings.TrimPrefix(ref, pr.cfg.Instance+"/")
	if ok, err := pr.drv.ImageExists(ctx, ref); err != nil {
		return err
	} else if !ok {
		return pr.core.NoImage(shown)
	}
	return nil
}
