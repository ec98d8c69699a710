package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
	"github.com/paddock-dev/paddock/appliance/store"
)

// checkImageCount refuses a new image name:tag past builds.per_user.
func (c *Catalog) checkImageCount(owner int64, name, tag string) error {
	if c.cfg.Builds.PerUser <= 0 {
		return nil
	}
	all, err := c.store.ListImages()
	if err != nil {
		return err
	}
	n := 0
	for _, im := range all {
		if im.Owner == owner {
			if im.Name == name && im.Tag == tag {
				return nil // a rebuild
			}
			n++
		}
	}
	if n >= c.cfg.Builds.PerUser {
		return tooManyImages(n)
	}
	return nil
}

func tooManyImages(n int) error {
	return api.Conflict("you have %d images, the most builds.per_user allows: remove one first ('paddock image rm')", n)
}

// List lists the images the caller may use: their own, those shared
// with them; an admin or owner sees every user's.
func (c *Catalog) List(ctx context.Context) ([]api.Image, error) {
	u, hasUser := caller.From(ctx)
	all, err := c.store.ListImages()
	if err != nil {
		return nil, err
	}
	out := []api.Image{}
	for _, im := range all {
		if hasUser && !caller.Sees(u, im.Owner) {
			if ok, err := c.core.SharedWith(u, im); err != nil || !ok {
				continue
			}
		}
		a, err := c.toAPIImage(ctx, im)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// findImage is the image a user names by NAME[:TAG], OWNER/NAME[:TAG], its
// id or an id prefix (of at least 4 hex digits), among those they see
// (mine: only those they may change). Anything else is "no image named".
func (c *Catalog) findImage(ctx context.Context, ref string, mine bool) (store.Image, error) {
	u, hasUser := caller.From(ctx)
	all, err := c.store.ListImages()
	if err != nil {
		return store.Image{}, err
	}
	may := func(im store.Image) bool {
		if !hasUser || caller.Sees(u, im.Owner) {
			return true
		}
		ok, _ := c.core.SharedWith(u, im)
		return ok && !mine
	}
	hex := strings.TrimPrefix(ref, "sha256:")
	if len(hex) >= 4 && strings.Trim(hex, "0123456789abcdef") == "" {
		var found []store.Image
		for _, im := range all {
			if strings.HasPrefix(strings.TrimPrefix(im.ID, "sha256:"), hex) && may(im) {
				found = append(found, im)
			}
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return store.Image{}, api.Conflict("%q names %d images: give more of its id, or its name", ref, len(found))
		}
	}
	owner, name, tag := imagefmt.SplitRef(ref)
	for _, im := range all {
		if im.Name != name || im.Tag != tag || !may(im) {
			continue
		}
		if owner == "" && im.Owner == u.ID || owner != "" && c.core.ImageRef(im) == c.core.EngineRef(imagefmt.Ref(owner, name, tag)) {
			return im, nil
		}
		if owner == "" && !hasUser {
			return im, nil
		}
	}
	return store.Image{}, api.NotFound("image", ref)
}

// anyTag is one of the caller's images (an admin's: anyone's) named ref,
// NAME or OWNER/NAME, whatever its tag.
func (c *Catalog) anyTag(ctx context.Context, ref string) (store.Image, error) {
	u, hasUser := caller.From(ctx)
	owner, name, _ := imagefmt.SplitRef(ref)
	all, err := c.store.ListImages()
	if err != nil {
		return store.Image{}, err
	}
	for _, im := range all {
		if im.Name != name || (hasUser && !caller.Sees(u, im.Owner)) {
			continue
		}
		if on, _ := c.userName(im.Owner); owner == "" && im.Owner == u.ID || owner != "" && on == owner {
			return im, nil
		}
	}
	return store.Image{}, api.NotFound("image", ref)
}

// Get is one image the caller sees.
func (c *Catalog) Get(ctx context.Context, ref string) (api.Image, error) {
	im, err := c.findImage(ctx, ref, false)
	if err != nil {
		return api.Image{}, err
	}
	return c.toAPIImage(ctx, im)
}

// Remove removes one of the caller's images (an admin's: anyone's).
// Boxes made from it keep it until they go.
func (c *Catalog) Remove(ctx context.Context, ref string) (api.Image, error) {
	im, err := c.findImage(ctx, ref, true)
	if err != nil {
		return api.Image{}, err
	}
	out, _ := c.toAPIImage(ctx, im)
	if err := c.store.DeleteImage(im.Owner, im.Name, im.Tag); err != nil {
		return api.Image{}, err
	}
	if keeper, ok := c.drv.(driver.ImageKeeper); ok {
		if err := keeper.RemoveImage(ctx, c.core.ImageRef(im)); err != nil && !errors.Is(err, driver.ErrNotFound) {
			c.log.Warn("removing an image's name", "image", c.core.ImageRef(im), "err", err)
		}
		c.dropImageID(ctx, keeper, im.ID)
	}
	return out, nil
}

// Share sets who else may make boxes from one of the caller's
// images (every tag of its name). Everyone is for an admin or the owner.
func (c *Catalog) Share(ctx context.Context, ref string, sh api.ImageShares) (api.Image, error) {
	im, err := c.findImage(ctx, ref, true)
	if _, _, tag := imagefmt.SplitRef(ref); api.IsNotFound(err) && !strings.HasSuffix(ref, ":"+tag) {
		im, err = c.anyTag(ctx, ref) // a name alone: what is shared is the name
	}
	if err != nil {
		return api.Image{}, err
	}
	if u, ok := caller.From(ctx); ok && sh.Everyone && !u.SeesAll() {
		return api.Image{}, &api.Error{Code: api.CodeForbidden, Message: "only the owner or an admin may share an image with everyone"}
	}
	want := map[store.ImageShare]bool{}
	for _, n := range sh.Users {
		gu, err := c.store.UserByName(n)
		if err != nil {
			return api.Image{}, api.Invalid("users", "no user named %q", n)
		}
		want[store.ImageShare{Owner: im.Owner, Name: im.Name, Kind: "user", Who: strconv.FormatInt(gu.ID, 10)}] = true
	}
	for _, g := range sh.Groups {
		if g == "" {
			return api.Image{}, api.Invalid("groups", "a group's name is empty")
		}
		want[store.ImageShare{Owner: im.Owner, Name: im.Name, Kind: "group", Who: g}] = true
	}
	if sh.Everyone {
		want[store.ImageShare{Owner: im.Owner, Name: im.Name, Kind: "all", Who: ""}] = true
	}
	cur, err := c.store.ImageShares(im.Owner)
	if err != nil {
		return api.Image{}, err
	}
	for _, had := range cur {
		if had.Name == im.Name && !want[had] {
			if err := c.store.ShareImage(had, false); err != nil {
				return api.Image{}, err
			}
		}
	}
	for w := range want {
		if err := c.store.ShareImage(w, true); err != nil {
			return api.Image{}, err
		}
	}
	return c.toAPIImage(ctx, im)
}

func (c *Catalog) toAPIImage(ctx context.Context, im store.Image) (api.Image, error) {
	u, hasUser := caller.From(ctx)
	owner, _ := c.userName(im.Owner)
	out := api.Image{Name: im.Name + ":" + im.Tag, Ref: imagefmt.Ref(owner, im.Name, im.Tag), Owner: owner, ID: im.ID, Size: im.Size,
		Dockerfile: im.Dockerfile, ContextDigest: im.ContextDigest, Bases: im.Bases, Project: im.Project, Built: im.Built,
		BuildSeconds: im.BuildTime.Seconds(), Mine: !hasUser || u.ID == im.Owner, SharedWith: []string{}}
	shares, err := c.store.ImageShares(im.Owner)
	if err != nil {
		return out, err
	}
	for _, sh := range shares {
		if sh.Name != im.Name {
			continue
		}
		switch sh.Kind {
		case "all":
			out.SharedWith = append(out.SharedWith, "everyone")
		case "group":
			out.SharedWith = append(out.SharedWith, "group:"+sh.Who)
		case "user":
			id, _ := strconv.ParseInt(sh.Who, 10, 64)
			n, _ := c.userName(id)
			out.SharedWith = append(out.SharedWith, "user:"+n)
		}
	}
	return out, nil
}

// lineWriter hands whole lines on (a build's output reaches its client a
// line at a time).
type lineWriter struct {
	w   io.Writer
	buf []byte
	mu  sync.Mutex
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}

// Flush hands on what is left after the last newline.
func (l *lineWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.w.Write(append(l.buf, '\n'))
		l.buf = nil
	}
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// humanBytes is n in MiB or GiB, as a person reads it.
func humanBytes(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
