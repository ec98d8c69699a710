package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/images/imagefmt"
	"github.com/paddock-dev/paddock/appliance/store"
)

// buildCtxDir is where the context goes in a builder box.
const buildCtxDir = "/tmp/paddock-build"

// builderEnv is the environment of the docker commands in a builder box:
// the legacy builder (the box image's docker has no buildx), no hints.
var builderEnv = []string{"DOCKER_BUILDKIT=0", "DOCKER_CLI_HINTS=false"}

// builds holds the users whose build is running: one at a time each,
// since their builder boxes share one cache (two engines on one
// /var/lib/docker would break it). A second build waits for the first,
// its builder box included, to be gone.
type builds struct {
	mu      sync.Mutex
	running map[int64]*buildSlot
}

type buildSlot struct {
	what string
	done chan struct{}
}

// start takes owner's slot, waiting while another build holds it (said
// once on logw); false when ctx ends first.
func (b *builds) start(ctx context.Context, owner int64, what string, logw io.Writer) bool {
	for said := false; ; said = true {
		b.mu.Lock()
		if b.running == nil {
			b.running = map[int64]*buildSlot{}
		}
		cur, busy := b.running[owner]
		if !busy {
			b.running[owner] = &buildSlot{what: what, done: make(chan struct{})}
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		if !said {
			fmt.Fprintf(logw, "waiting for your build of %s to end (your builds share one cache, one at a time)\n", cur.what)
		}
		select {
		case <-cur.done:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *builds) end(owner int64) {
	b.mu.Lock()
	if cur, ok := b.running[owner]; ok {
		close(cur.done)
		delete(b.running, owner)
	}
	b.mu.Unlock()
}

// ImageBuild is what Build is asked.
type ImageBuild struct {
	Name, Tag  string
	Dockerfile string // its path in the context ("Dockerfile")
	Policy     string // the builder box's egress policy ("" the default)
	Project    string // the Boxfile project that declares the image
}

// CannotBuild says why a server with this engine driver and
// configuration cannot build images ("" when it can), for the pages that
// offer a build.
func CannotBuild(drv any, cfg *config.Config) string {
	if _, err := buildsOn(drv, cfg); err != nil {
		return err.Error()
	}
	return ""
}

// buildsOn says why a server cannot build images, or nil.
func buildsOn(drv any, cfg *config.Config) (driver.ImageKeeper, error) {
	k, ok := drv.(driver.ImageKeeper)
	if !ok {
		return nil, api.Conflict("this server's engine driver cannot take in images")
	}
	if cfg.Runtime != "sysbox-runc" && !cfg.UnsafeDockerInRuncBoxes {
		return nil, api.Conflict("image builds run Docker in a builder box, and this server's boxes run on %s, where Docker inside a box does not work: use the sysbox-runc runtime", cfg.Runtime)
	}
	return k, nil
}

// Build builds the caller's image b.Name:b.Tag from a build context
// (a tar stream holding the Dockerfile), writing the build's output to
// logw as it comes. An image whose inputs are those of the image there is
// (the same context, Dockerfile and bases) is that image, at once.
func (c *Catalog) Build(ctx context.Context, b ImageBuild, body io.Reader, logw io.Writer) (api.Image, error) {
	u, _ := caller.From(ctx)
	owner := caller.OwnerID(ctx)
	if b.Tag == "" {
		b.Tag = imagefmt.DefaultTag
	}
	if b.Dockerfile == "" {
		b.Dockerfile = "Dockerfile"
	}
	if err := api.ValidName("image", b.Name); err != nil {
		return api.Image{}, err
	}
	if err := imagefmt.ValidTag(b.Tag); err != nil {
		return api.Image{}, api.Invalid("tag", "%v", err)
	}
	if b.Project != "" {
		if err := api.ValidName("project", b.Project); err != nil {
			return api.Image{}, err
		}
	}
	if df := path.Clean(b.Dockerfile); path.IsAbs(df) || df == ".." || strings.HasPrefix(df, "../") {
		return api.Image{}, api.Invalid("dockerfile", "the Dockerfile %q must be a path in the build context", b.Dockerfile)
	}
	keeper, err := buildsOn(c.drv, c.cfg)
	if err != nil {
		return api.Image{}, err
	}
	uname, err := c.userName(owner)
	if err != nil {
		return api.Image{}, err
	}
	ref := imagefmt.Ref(uname, b.Name, b.Tag)
	eref := c.core.EngineRef(ref)
	if c.allowedImage(eref) {
		return api.Image{}, api.Invalid("name", "%s is the name of one of the server's images: choose another name", ref)
	}
	if err := c.checkImageCount(owner, b.Name, b.Tag); err != nil {
		return api.Image{}, err
	}
	// The context, checked as a push's archive is, spooled to be read
	// twice (its digest and Dockerfile, then into the builder).
	dir := filepath.Join(c.cfg.StateDir, "builds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return api.Image{}, err
	}
	spool, err := archive.Spool(body, dir, c.cfg.ArchiveMaxMiB<<20, func(h *tar.Header) {
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	})
	if err != nil {
		return api.Image{}, api.Invalid("context", "the build context: %v", err)
	}
	defer spool.Close()
	digest, df, err := imagefmt.ContextDigest(spool.File, b.Dockerfile)
	if err != nil {
		return api.Image{}, api.Invalid("context", "%v", err)
	}
	if df == nil {
		return api.Image{}, api.Invalid("dockerfile", "the build context has no file %s (the Dockerfile)", b.Dockerfile)
	}
	bases, err := imagefmt.Bases(df)
	if err != nil {
		return api.Image{}, api.Invalid("dockerfile", "%s", strings.Replace(err.Error(), "Dockerfile", b.Dockerfile, 1))
	}
	type base struct{ as, ref, id string }
	var need []base
	var ids, names []string
	for _, bs := range bases {
		hostRef, err := c.buildBase(ctx, u, bs.Ref)
		if err != nil {
			return api.Image{}, api.Invalid("dockerfile", "%s:%d: %v", b.Dockerfile, bs.Line, err)
		}
		id, err := c.imageID(ctx, hostRef)
		if err != nil {
			return api.Image{}, err
		}
		need = append(need, base{as: bs.Ref, ref: hostRef, id: id})
		ids = append(ids, id)
		names = append(names, strings.TrimPrefix(hostRef, c.cfg.Instance+"/")) // as users name it
	}
	inputs := imagefmt.InputsDigest(digest, path.Clean(b.Dockerfile), ids)
	if old, err := c.store.GetImage(owner, b.Name, b.Tag); err == nil && old.Inputs == inputs {
		if id, err := c.imageID(ctx, eref); err == nil && id == old.ID {
			fmt.Fprintf(logw, "%s: the context, Dockerfile and bases are those of its last build: it is that image (%s)\n", ref, imagefmt.Short(old.ID))
			if b.Project != old.Project {
				old.Project = b.Project
				if err := c.store.PutImage(old); err != nil {
					return api.Image{}, err
				}
			}
			out, err := c.toAPIImage(ctx, old)
			out.Cached = true
			return out, err
		}
	}

	// The builder box, once the user's last build is over. (Its output
	// may have begun: the request's body has been read whole by now, as
	// an HTTP/1 server cannot read it after answering.)
	if !c.builds.start(ctx, owner, b.Name+":"+b.Tag, logw) {
		return api.Image{}, ctx.Err()
	}
	defer c.builds.end(owner)
	t0 := time.Now()
	build := store.Build{ID: auth.RandomHex(8), Owner: owner, Name: b.Name, Tag: b.Tag, Started: c.core.Time()}
	build.Box = "build-" + build.ID
	if err := c.store.StartBuild(build); err != nil {
		return api.Image{}, err
	}
	stay := context.WithoutCancel(ctx)
	defer func() { c.endBuild(stay, build, keeper) }() // build as it is then
	fmt.Fprintf(logw, "builder box %s: starting\n", build.Box)
	if err := c.core.NewBuilder(ctx, build, b.Policy); err != nil {
		return api.Image{}, err
	}
	key := build.Box
	bctx, cancel := context.WithTimeout(ctx, c.cfg.Builds.Timeout)
	defer cancel()
	timedOut := func(err error) error {
		if bctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return api.Conflict("the build took longer than builds.timeout (%s): stopped", c.cfg.Builds.Timeout)
		}
		return err
	}
	run := func(stdin io.Reader, stdout io.Writer, cmd ...string) error {
		var stderr bytes.Buffer
		code, err := c.drv.Exec(bctx, key, driver.ExecSpec{Cmd: cmd, User: "root", Stdin: stdin, Stdout: stdout, Stderr: &stderr,
			Env: builderEnv})
		if err != nil {
			return timedOut(err)
		}
		if code != 0 {
			return timedOut(fmt.Errorf("%s in the builder box: exit %d: %s", cmd[0], code, strings.TrimSpace(lastLines(stderr.String(), 5))))
		}
		return nil
	}
	if err := run(nil, nil, "mkdir", "-p", buildCtxDir); err != nil {
		return api.Image{}, err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return api.Image{}, err
	}
	err = c.drv.CopyTo(bctx, key, buildCtxDir, spool.File)
	spool.Close() // in the builder now (Close again, deferred, does nothing)
	if err != nil {
		return api.Image{}, timedOut(fmt.Errorf("copying the context into the builder: %w", err))
	}
	// The bases, into the builder's engine (unless its cache has them).
	for _, bs := range need {
		var have bytes.Buffer
		c.drv.Exec(bctx, key, driver.ExecSpec{Cmd: []string{"docker", "image", "inspect", "-f", "{{.Id}}", bs.ref}, User: "root", Stdout: &have, Stderr: io.Discard})
		if strings.TrimSpace(have.String()) != bs.id {
			fmt.Fprintf(logw, "loading %s into the builder\n", bs.ref)
			rc, err := keeper.SaveImages(bctx, []string{bs.ref})
			if err != nil {
				return api.Image{}, err
			}
			err = run(rc, nil, "docker", "load", "-q")
			rc.Close()
			if err != nil {
				return api.Image{}, err
			}
		}
		if bs.as != bs.ref {
			if err := run(nil, nil, "docker", "tag", bs.ref, bs.as); err != nil {
				return api.Image{}, err
			}
		}
	}
	out := "paddock-build:" + build.ID
	// The steps share the builder box's network (no bridge of the
	// builder's engine in between): what they reach is what the box's
	// policy lets it reach.
	args := []string{"docker", "build", "--pull=false", "--rm", "--force-rm", "--network", "host", "-t", out, "-f", path.Join(buildCtxDir, b.Dockerfile),
		"--label", "paddock.instance=" + c.cfg.Instance, "--label", "paddock.owner=" + uname, "--label", "paddock.image=" + b.Name + ":" + b.Tag,
		"--label", "paddock.context=" + digest, "--label", "paddock.built=" + c.core.Time().UTC().Format(time.RFC3339)}
	if b.Project != "" {
		args = append(args, "--label", "paddock.project="+b.Project)
	}
	args = append(args, buildCtxDir)
	lw := &lineWriter{w: logw}
	// The cache is measured while the steps run: past its bound, the
	// build stops with an error that says so.
	runCtx, stopRun := context.WithCancel(bctx)
	var overBy atomic.Int64
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		c.watchCache(runCtx, key, func(n int64) { overBy.Store(n); stopRun() })
	}()
	code, err := c.drv.Exec(runCtx, key, driver.ExecSpec{Cmd: args, User: "root", Stdout: lw, Stderr: lw, Env: builderEnv})
	stopRun()
	<-watching
	lw.Flush()
	if n := overBy.Load(); n > 0 {
		return api.Image{}, api.Conflict("the build's cache (the builder's /var/lib/docker) reached %s, past builds.cache_gib (%g GiB): the build was stopped, and the cache is emptied", humanBytes(n), c.cfg.Builds.CacheGiB)
	}
	if err != nil {
		return api.Image{}, timedOut(err)
	}
	if code != 0 {
		return api.Image{}, timedOut(api.Invalid("dockerfile", "the build failed (docker build exit %d): its output is above", code))
	}
	var idb, sizeb bytes.Buffer
	if err := run(nil, &idb, "docker", "image", "inspect", "-f", "{{.Id}}", out); err != nil {
		return api.Image{}, err
	}
	if err := run(nil, &sizeb, "docker", "image", "inspect", "-f", "{{.Size}}", out); err != nil {
		return api.Image{}, err
	}
	id := strings.TrimSpace(idb.String())
	size, _ := strconv.ParseInt(strings.TrimSpace(sizeb.String()), 10, 64)
	max := int64(c.cfg.Builds.ImageGiB * (1 << 30))
	if size > max {
		return api.Image{}, api.Invalid("dockerfile", "the image is %s, over builds.image_gib (%g GiB)", humanBytes(size), c.cfg.Builds.ImageGiB)
	}
	if err := c.store.SetBuildImage(build.ID, id); err != nil {
		return api.Image{}, err
	}
	build.ImageID = id
	fmt.Fprintf(logw, "taking %s (%s) out of the builder\n", imagefmt.Short(id), humanBytes(size))
	if err := c.takeImage(bctx, keeper, key, out, id, max+max/4+(64<<20)); err != nil {
		return api.Image{}, timedOut(err)
	}
	// The name: never one the server's engine has for anything else.
	old, oldErr := c.store.GetImage(owner, b.Name, b.Tag)
	if cur, err := c.imageID(ctx, eref); err == nil && cur != "" && (oldErr != nil || old.ID != cur) {
		return api.Image{}, api.Conflict("the server's engine has an image named %s that is not your image: choose another name", eref)
	}
	if err := keeper.TagImage(stay, id, eref); err != nil {
		return api.Image{}, err
	}
	im := store.Image{Owner: owner, Name: b.Name, Tag: b.Tag, ID: id, Size: size, Dockerfile: path.Clean(b.Dockerfile),
		ContextDigest: digest, Inputs: inputs, Bases: names, Project: b.Project, Built: c.core.Time(), BuildTime: time.Since(t0)}
	// Counted again as it is recorded, in one step: builds asked for at
	// once all passed the count above.
	if n, err := c.store.PutImageUnder(im, c.cfg.Builds.PerUser); err != nil {
		keeper.RemoveImage(stay, eref)
		if errors.Is(err, store.ErrOverLimit) {
			err = tooManyImages(n)
		}
		return api.Image{}, err
	}
	if oldErr == nil && old.ID != id {
		c.dropImageID(stay, keeper, old.ID)
	}
	c.store.SetBuildImage(build.ID, "") // named: not the build's to remove
	build.ImageID = ""
	fmt.Fprintf(logw, "built %s (%s) in %.1f s\n", ref, imagefmt.Short(id), time.Since(t0).Seconds())
	return c.toAPIImage(ctx, im)
}

// takeImage moves the builder's image out into the server's engine: docker
// save in the builder, imagefmt.Sanitize on the way, a load here.
func (c *Catalog) takeImage(ctx context.Context, keeper driver.ImageKeeper, key, ref, id string, max int64) error {
	saveR, saveW := io.Pipe()
	loadR, loadW := io.Pipe()
	errs := make(chan error, 3)
	go func() {
		var stderr bytes.Buffer
		code, err := c.drv.Exec(ctx, key, driver.ExecSpec{Cmd: []string{"docker", "save", ref}, User: "root", Stdout: saveW, Stderr: &stderr})
		if err == nil && code != 0 {
			err = fmt.Errorf("docker save in the builder box: exit %d: %s", code, strings.TrimSpace(stderr.String()))
		}
		saveW.CloseWithError(err)
		errs <- err
	}()
	var got string
	go func() {
		var err error
		got, err = imagefmt.Sanitize(loadW, saveR, max)
		if errors.Is(err, imagefmt.ErrTooBig) {
			err = api.Invalid("dockerfile", "the image's archive is over builds.image_gib (%g GiB)", c.cfg.Builds.ImageGiB)
		}
		loadW.CloseWithError(err)
		saveR.CloseWithError(err)
		errs <- err
	}()
	lerr := keeper.LoadImage(ctx, loadR, id)
	loadR.CloseWithError(errors.New("load ended"))
	var first error
	for range 2 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return first
	}
	if lerr != nil {
		return lerr
	}
	if got != id {
		return fmt.Errorf("the builder's archive is of image %s, not the %s it built", got, id)
	}
	return nil
}

// endBuild removes what a build made that it does not leave: its builder
// box, an image it loaded but did not name, its record. The user's build
// cache stays, emptied when it is over its bound.
func (c *Catalog) endBuild(ctx context.Context, b store.Build, keeper driver.ImageKeeper) {
	if _, err := c.store.GetBox(b.Box); err == nil {
		c.trimCache(ctx, b)
		if err := c.core.RemoveBox(ctx, b.Box); err != nil && !api.IsNotFound(err) {
			c.log.Warn("removing a builder box", "box", b.Box, "err", err)
		}
	}
	if b.ImageID != "" && keeper != nil {
		c.dropImageID(ctx, keeper, b.ImageID)
	}
	if err := c.store.EndBuild(b.ID); err != nil {
		c.log.Warn("forgetting a build", "build", b.ID, "err", err)
	}
}

// trimCache empties a user's build cache when it is over builds.cache_gib.
func (c *Catalog) trimCache(ctx context.Context, b store.Build) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	n, ok := c.cacheSize(ctx, b.Box)
	if !ok || !c.overCache(n) {
		return
	}
	c.log.Info("a build cache is over builds.cache_gib: emptying it", "owner", b.Owner, "size", humanBytes(n))
	c.drv.Exec(ctx, b.Box, driver.ExecSpec{Cmd: []string{"docker", "system", "prune", "-af"}, User: "root", Stdout: io.Discard, Stderr: io.Discard})
}

// cacheSize is the bytes of a builder box's /var/lib/docker (its owner's
// build cache), as du counts them.
func (c *Catalog) cacheSize(ctx context.Context, box string) (int64, bool) {
	var out bytes.Buffer
	code, err := c.drv.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"du", "-sxk", "/var/lib/docker"}, User: "root", Stdout: &out, Stderr: io.Discard})
	if err != nil || code != 0 {
		return 0, false
	}
	f := strings.Fields(out.String())
	if len(f) == 0 {
		return 0, false
	}
	kib, err := strconv.ParseInt(f[0], 10, 64)
	return kib << 10, err == nil
}

// overCache says whether a build cache of n bytes is past builds.cache_gib.
func (c *Catalog) overCache(n int64) bool { return float64(n) > c.cfg.Builds.CacheGiB*(1<<30) }

// cacheWatchEvery is how often a running build's cache is measured.
const cacheWatchEvery = 5 * time.Second

// watchCache measures a running build's cache until stop ends; past
// builds.cache_gib it calls over with the size, once, and stops.
func (c *Catalog) watchCache(stop context.Context, box string, over func(int64)) {
	t := time.NewTicker(cacheWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
			if n, ok := c.cacheSize(stop, box); ok && c.overCache(n) {
				over(n)
				return
			}
		}
	}
}

// dropImageID removes an image by id from the server's engine unless one
// of the users' images is it.
func (c *Catalog) dropImageID(ctx context.Context, keeper driver.ImageKeeper, id string) {
	if used, err := c.store.ImageIDUsed(id); err != nil || used {
		return
	}
	if err := keeper.RemoveImage(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
		c.log.Info("an image no name uses stays (a box was made from it)", "image", id, "err", err)
	}
}

// Recover removes what builds cut off by a crash left: their
// builder boxes, and images loaded but not yet named; and the spooled
// contexts.
func (c *Catalog) Recover(ctx context.Context) {
	bs, err := c.store.Builds()
	if err != nil {
		c.log.Warn("reading the builds under way", "err", err)
		return
	}
	keeper, _ := c.drv.(driver.ImageKeeper)
	for _, b := range bs {
		c.log.Info("removing what a build cut off left", "build", b.ID, "box", b.Box)
		c.endBuild(ctx, b, keeper)
	}
	if ents, err := os.ReadDir(filepath.Join(c.cfg.StateDir, "builds")); err == nil {
		for _, e := range ents {
			os.Remove(filepath.Join(c.cfg.StateDir, "builds", e.Name()))
		}
	}
}

// buildBase is the server's name of an image a Dockerfile of the user's
// builds on: one of the server's images, or one of the user's own images
// (NAME[:TAG]) or one shared with them (OWNER/NAME[:TAG]).
func (c *Catalog) buildBase(ctx context.Context, u store.User, ref string) (string, error) {
	if c.allowedImage(ref) {
		if err := c.core.CheckImage(ctx, ref); err != nil {
			return "", err
		}
		return ref, nil
	}
	if im, err := c.core.UsableImage(ctx, u, ref); err == nil {
		return c.core.ImageRef(im), nil
	}
	return "", fmt.Errorf("FROM %s: an image may be built only on the server's images (%s) or on your own ('paddock images')", ref, strings.Join(c.core.ServerImages(), ", "))
}

// imageID is what ref names in the server's engine now ("" for nothing).
func (c *Catalog) imageID(ctx context.Context, ref string) (string, error) {
	if !driver.ImageID.Has(c.drv) {
		return "", errors.New("this engine driver cannot tell images' ids")
	}
	return driver.ImageID.Do(ctx, c.drv, ref)
}
