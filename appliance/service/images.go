package service

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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/archive"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/images"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Users' own images. A build (BuildImage) runs in a builder box: a box of
// the user's, under the boxes' runtime and the egress policy the build
// names, whose /var/lib/docker is the user's build cache. Paddock loads
// the bases into the builder's engine, the builder's engine runs the
// Dockerfile, and paddockd takes the result out (docker save), through
// images.Sanitize, into the server's engine, where it names it
// OWNER/NAME:TAG. The server's engine never runs a step.

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

// ImageBuild is what BuildImage is asked.
type ImageBuild struct {
	Name, Tag  string
	Dockerfile string // its path in the context ("Dockerfile")
	Policy     string // the builder box's egress policy ("" the default)
	Project    string // the Boxfile project that declares the image
}

// CannotBuild says why this server cannot build images ("" when it can),
// for the pages that offer a build.
func (s *Service) CannotBuild() string {
	if _, err := s.buildsOn(); err != nil {
		return err.Error()
	}
	return ""
}

// buildsOn says why this server cannot build images, or nil.
func (s *Service) buildsOn() (driver.ImageKeeper, error) {
	k, ok := s.Driver.(driver.ImageKeeper)
	if !ok {
		return nil, conflict("this server's engine driver cannot take in images")
	}
	if s.Cfg.Runtime != "sysbox-runc" && !s.Cfg.UnsafeDockerInRuncBoxes {
		return nil, conflict("image builds run Docker in a builder box, and this server's boxes run on %s, where Docker inside a box does not work: use the sysbox-runc runtime", s.Cfg.Runtime)
	}
	return k, nil
}

// BuildImage builds the caller's image b.Name:b.Tag from a build context
// (a tar stream holding the Dockerfile), writing the build's output to
// logw as it comes. An image whose inputs are those of the image there is
// (the same context, Dockerfile and bases) is that image, at once.
func (s *Service) BuildImage(ctx context.Context, b ImageBuild, body io.Reader, logw io.Writer) (api.Image, error) {
	u, _ := caller.From(ctx)
	owner := caller.OwnerID(ctx)
	if b.Tag == "" {
		b.Tag = images.DefaultTag
	}
	if b.Dockerfile == "" {
		b.Dockerfile = "Dockerfile"
	}
	if err := api.ValidName("image", b.Name); err != nil {
		return api.Image{}, err
	}
	if err := images.ValidTag(b.Tag); err != nil {
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
	keeper, err := s.buildsOn()
	if err != nil {
		return api.Image{}, err
	}
	uname, err := s.userName(owner)
	if err != nil {
		return api.Image{}, err
	}
	ref := images.Ref(uname, b.Name, b.Tag)
	eref := s.engineRef(ref)
	if s.allowedImage(eref) {
		return api.Image{}, api.Invalid("name", "%s is the name of one of the server's images: choose another name", ref)
	}
	if err := s.checkImageCount(owner, b.Name, b.Tag); err != nil {
		return api.Image{}, err
	}
	// The context, checked as a push's archive is, spooled to be read
	// twice (its digest and Dockerfile, then into the builder).
	dir := filepath.Join(s.Cfg.StateDir, "builds")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return api.Image{}, err
	}
	spool, err := archive.Spool(body, dir, s.Cfg.ArchiveMaxMiB<<20, func(h *tar.Header) {
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
	})
	if err != nil {
		return api.Image{}, api.Invalid("context", "the build context: %v", err)
	}
	defer spool.Close()
	digest, df, err := images.ContextDigest(spool.File, b.Dockerfile)
	if err != nil {
		return api.Image{}, api.Invalid("context", "%v", err)
	}
	if df == nil {
		return api.Image{}, api.Invalid("dockerfile", "the build context has no file %s (the Dockerfile)", b.Dockerfile)
	}
	bases, err := images.Bases(df)
	if err != nil {
		return api.Image{}, api.Invalid("dockerfile", "%s", strings.Replace(err.Error(), "Dockerfile", b.Dockerfile, 1))
	}
	type base struct{ as, ref, id string }
	var need []base
	var ids, names []string
	for _, bs := range bases {
		hostRef, err := s.buildBase(ctx, u, bs.Ref)
		if err != nil {
			return api.Image{}, api.Invalid("dockerfile", "%s:%d: %v", b.Dockerfile, bs.Line, err)
		}
		id, err := s.imageID(ctx, hostRef)
		if err != nil {
			return api.Image{}, err
		}
		need = append(need, base{as: bs.Ref, ref: hostRef, id: id})
		ids = append(ids, id)
		names = append(names, strings.TrimPrefix(hostRef, s.Cfg.Instance+"/")) // as users name it
	}
	inputs := images.InputsDigest(digest, path.Clean(b.Dockerfile), ids)
	if old, err := s.Store.GetImage(owner, b.Name, b.Tag); err == nil && old.Inputs == inputs {
		if id, err := s.imageID(ctx, eref); err == nil && id == old.ID {
			fmt.Fprintf(logw, "%s: the context, Dockerfile and bases are those of its last build: it is that image (%s)\n", ref, short(old.ID))
			if b.Project != old.Project {
				old.Project = b.Project
				if err := s.Store.PutImage(old); err != nil {
					return api.Image{}, err
				}
			}
			out, err := s.toAPIImage(ctx, old)
			out.Cached = true
			return out, err
		}
	}

	// The builder box, once the user's last build is over. (Its output
	// may have begun: the request's body has been read whole by now, as
	// an HTTP/1 server cannot read it after answering.)
	if !s.builds.start(ctx, owner, b.Name+":"+b.Tag, logw) {
		return api.Image{}, ctx.Err()
	}
	defer s.builds.end(owner)
	t0 := time.Now()
	build := store.Build{ID: randHex(8), Owner: owner, Name: b.Name, Tag: b.Tag, Started: s.now()}
	build.Box = "build-" + build.ID
	if err := s.Store.StartBuild(build); err != nil {
		return api.Image{}, err
	}
	stay := context.WithoutCancel(ctx)
	defer func() { s.endBuild(stay, build, keeper) }() // build as it is then
	fmt.Fprintf(logw, "builder box %s: starting\n", build.Box)
	if err := s.newBuilder(ctx, build, b.Policy); err != nil {
		return api.Image{}, err
	}
	key := build.Box
	bctx, cancel := context.WithTimeout(ctx, s.Cfg.Builds.Timeout)
	defer cancel()
	timedOut := func(err error) error {
		if bctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return conflict("the build took longer than builds.timeout (%s): stopped", s.Cfg.Builds.Timeout)
		}
		return err
	}
	run := func(stdin io.Reader, stdout io.Writer, cmd ...string) error {
		var stderr bytes.Buffer
		code, err := s.Driver.Exec(bctx, key, driver.ExecSpec{Cmd: cmd, User: "root", Stdin: stdin, Stdout: stdout, Stderr: &stderr,
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
	err = s.Driver.CopyTo(bctx, key, buildCtxDir, spool.File)
	spool.Close() // in the builder now (Close again, deferred, does nothing)
	if err != nil {
		return api.Image{}, timedOut(fmt.Errorf("copying the context into the builder: %w", err))
	}
	// The bases, into the builder's engine (unless its cache has them).
	for _, bs := range need {
		var have bytes.Buffer
		s.Driver.Exec(bctx, key, driver.ExecSpec{Cmd: []string{"docker", "image", "inspect", "-f", "{{.Id}}", bs.ref}, User: "root", Stdout: &have, Stderr: io.Discard})
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
		"--label", "paddock.instance=" + s.Cfg.Instance, "--label", "paddock.owner=" + uname, "--label", "paddock.image=" + b.Name + ":" + b.Tag,
		"--label", "paddock.context=" + digest, "--label", "paddock.built=" + s.now().UTC().Format(time.RFC3339)}
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
		s.watchCache(runCtx, key, func(n int64) { overBy.Store(n); stopRun() })
	}()
	code, err := s.Driver.Exec(runCtx, key, driver.ExecSpec{Cmd: args, User: "root", Stdout: lw, Stderr: lw, Env: builderEnv})
	stopRun()
	<-watching
	lw.Flush()
	if n := overBy.Load(); n > 0 {
		return api.Image{}, conflict("the build's cache (the builder's /var/lib/docker) reached %s, past builds.cache_gib (%g GiB): the build was stopped, and the cache is emptied", humanBytes(n), s.Cfg.Builds.CacheGiB)
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
	max := int64(s.Cfg.Builds.ImageGiB * (1 << 30))
	if size > max {
		return api.Image{}, api.Invalid("dockerfile", "the image is %s, over builds.image_gib (%g GiB)", humanBytes(size), s.Cfg.Builds.ImageGiB)
	}
	if err := s.Store.SetBuildImage(build.ID, id); err != nil {
		return api.Image{}, err
	}
	build.ImageID = id
	fmt.Fprintf(logw, "taking %s (%s) out of the builder\n", short(id), humanBytes(size))
	if err := s.takeImage(bctx, keeper, key, out, id, max+max/4+(64<<20)); err != nil {
		return api.Image{}, timedOut(err)
	}
	// The name: never one the server's engine has for anything else.
	old, oldErr := s.Store.GetImage(owner, b.Name, b.Tag)
	if cur, err := s.imageID(ctx, eref); err == nil && cur != "" && (oldErr != nil || old.ID != cur) {
		return api.Image{}, conflict("the server's engine has an image named %s that is not your image: choose another name", eref)
	}
	if err := keeper.TagImage(stay, id, eref); err != nil {
		return api.Image{}, err
	}
	im := store.Image{Owner: owner, Name: b.Name, Tag: b.Tag, ID: id, Size: size, Dockerfile: path.Clean(b.Dockerfile),
		ContextDigest: digest, Inputs: inputs, Bases: names, Project: b.Project, Built: s.now(), BuildTime: time.Since(t0)}
	// Counted again as it is recorded, in one step: builds asked for at
	// once all passed the count above.
	if n, err := s.Store.PutImageUnder(im, s.Cfg.Builds.PerUser); err != nil {
		keeper.RemoveImage(stay, eref)
		if errors.Is(err, store.ErrOverLimit) {
			err = tooManyImages(n)
		}
		return api.Image{}, err
	}
	if oldErr == nil && old.ID != id {
		s.dropImageID(stay, keeper, old.ID)
	}
	s.Store.SetBuildImage(build.ID, "") // named: not the build's to remove
	build.ImageID = ""
	fmt.Fprintf(logw, "built %s (%s) in %.1f s\n", ref, short(id), time.Since(t0).Seconds())
	return s.toAPIImage(ctx, im)
}

// takeImage moves the builder's image out into the server's engine: docker
// save in the builder, images.Sanitize on the way, a load here.
func (s *Service) takeImage(ctx context.Context, keeper driver.ImageKeeper, key, ref, id string, max int64) error {
	saveR, saveW := io.Pipe()
	loadR, loadW := io.Pipe()
	errs := make(chan error, 3)
	go func() {
		var stderr bytes.Buffer
		code, err := s.Driver.Exec(ctx, key, driver.ExecSpec{Cmd: []string{"docker", "save", ref}, User: "root", Stdout: saveW, Stderr: &stderr})
		if err == nil && code != 0 {
			err = fmt.Errorf("docker save in the builder box: exit %d: %s", code, strings.TrimSpace(stderr.String()))
		}
		saveW.CloseWithError(err)
		errs <- err
	}()
	var got string
	go func() {
		var err error
		got, err = images.Sanitize(loadW, saveR, max)
		if errors.Is(err, images.ErrTooBig) {
			err = api.Invalid("dockerfile", "the image's archive is over builds.image_gib (%g GiB)", s.Cfg.Builds.ImageGiB)
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
func (s *Service) endBuild(ctx context.Context, b store.Build, keeper driver.ImageKeeper) {
	if _, err := s.Store.GetBox(b.Box); err == nil {
		s.trimCache(ctx, b)
		if err := s.RemoveBox(ctx, b.Box); err != nil && !isNotFound(err) {
			s.Log.Warn("removing a builder box", "box", b.Box, "err", err)
		}
	}
	if b.ImageID != "" && keeper != nil {
		s.dropImageID(ctx, keeper, b.ImageID)
	}
	if err := s.Store.EndBuild(b.ID); err != nil {
		s.Log.Warn("forgetting a build", "build", b.ID, "err", err)
	}
}

// trimCache empties a user's build cache when it is over builds.cache_gib.
func (s *Service) trimCache(ctx context.Context, b store.Build) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	n, ok := s.cacheSize(ctx, b.Box)
	if !ok || !s.overCache(n) {
		return
	}
	s.Log.Info("a build cache is over builds.cache_gib: emptying it", "owner", b.Owner, "size", humanBytes(n))
	s.Driver.Exec(ctx, b.Box, driver.ExecSpec{Cmd: []string{"docker", "system", "prune", "-af"}, User: "root", Stdout: io.Discard, Stderr: io.Discard})
}

// cacheSize is the bytes of a builder box's /var/lib/docker (its owner's
// build cache), as du counts them.
func (s *Service) cacheSize(ctx context.Context, box string) (int64, bool) {
	var out bytes.Buffer
	code, err := s.Driver.Exec(ctx, box, driver.ExecSpec{Cmd: []string{"du", "-sxk", "/var/lib/docker"}, User: "root", Stdout: &out, Stderr: io.Discard})
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
func (s *Service) overCache(n int64) bool { return float64(n) > s.Cfg.Builds.CacheGiB*(1<<30) }

// cacheWatchEvery is how often a running build's cache is measured.
const cacheWatchEvery = 5 * time.Second

// watchCache measures a running build's cache until stop ends; past
// builds.cache_gib it calls over with the size, once, and stops.
func (s *Service) watchCache(stop context.Context, box string, over func(int64)) {
	t := time.NewTicker(cacheWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
			if n, ok := s.cacheSize(stop, box); ok && s.overCache(n) {
				over(n)
				return
			}
		}
	}
}

// dropImageID removes an image by id from the server's engine unless one
// of the users' images is it.
func (s *Service) dropImageID(ctx context.Context, keeper driver.ImageKeeper, id string) {
	if used, err := s.Store.ImageIDUsed(id); err != nil || used {
		return
	}
	if err := keeper.RemoveImage(ctx, id); err != nil && !errors.Is(err, driver.ErrNotFound) {
		s.Log.Info("an image no name uses stays (a box was made from it)", "image", id, "err", err)
	}
}

// newBuilder declares a build's builder box and waits for it to run: on
// this server, with the policy asked for, its owner's build cache as its
// /var/lib/docker, and a TTL past the build's bound (so that even a lost
// one goes).
func (s *Service) newBuilder(ctx context.Context, build store.Build, policy string) error {
	off := false
	bt := s.Cfg.Builds.Type
	if bt == "" {
		bt = "medium"
	}
	bx, err := s.newBox(api.BoxPost{Name: build.Box, Policy: policy, Desktop: &off, Type: bt, TTL: (s.Cfg.Builds.Timeout + 10*time.Minute).String()})
	if err != nil {
		return err
	}
	bx.Owner = build.Owner
	bx.Builder = true
	bx.Image = s.Cfg.Image
	bx.Labels = map[string]string{"paddock.build": build.Name + "." + build.Tag}
	err = s.Store.Declare(func(tx *store.Tx) error {
		if err := s.checkPolicy(ctx, tx, bx.Policy); err != nil {
			return err
		}
		if err := s.placeOn(tx, &bx, s.localNodeName()); err != nil {
			return err
		}
		return s.createBox(tx, bx)
	})
	if _, err := s.settle(ctx, bx.Name, err, "box."+bx.Name, "volume.buildcache."+strconv.FormatInt(build.Owner, 10)); err != nil {
		return fmt.Errorf("the builder box: %w", err)
	}
	return nil
}

// RecoverBuilds removes what builds cut off by a crash left: their
// builder boxes, and images loaded but not yet named; and the spooled
// contexts.
func (s *Service) RecoverBuilds(ctx context.Context) {
	bs, err := s.Store.Builds()
	if err != nil {
		s.Log.Warn("reading the builds under way", "err", err)
		return
	}
	keeper, _ := s.Driver.(driver.ImageKeeper)
	for _, b := range bs {
		s.Log.Info("removing what a build cut off left", "build", b.ID, "box", b.Box)
		s.endBuild(ctx, b, keeper)
	}
	if ents, err := os.ReadDir(filepath.Join(s.Cfg.StateDir, "builds")); err == nil {
		for _, e := range ents {
			os.Remove(filepath.Join(s.Cfg.StateDir, "builds", e.Name()))
		}
	}
}

// allowedImage says whether ref is one of the server's images.
func (s *Service) allowedImage(ref string) bool {
	return ref == s.Cfg.Image || slices.Contains(s.Cfg.Images, ref)
}

// buildBase is the server's name of an image a Dockerfile of the user's
// builds on: one of the server's images, or one of the user's own images
// (NAME[:TAG]) or one shared with them (OWNER/NAME[:TAG]).
func (s *Service) buildBase(ctx context.Context, u store.User, ref string) (string, error) {
	if s.allowedImage(ref) {
		if err := s.checkImage(ctx, ref); err != nil {
			return "", err
		}
		return ref, nil
	}
	if im, err := s.usableImage(ctx, u, ref); err == nil {
		return s.imageRef(im), nil
	}
	return "", fmt.Errorf("FROM %s: an image may be built only on the server's images (%s) or on your own ('paddock images')", ref, strings.Join(s.ServerImages(), ", "))
}

// usableImage is the user's image named ref (NAME[:TAG]), or another
// user's shared with them (OWNER/NAME[:TAG]). Anything else, another
// user's image not shared with them included, is not found, alike.
func (s *Service) usableImage(ctx context.Context, u store.User, ref string) (store.Image, error) {
	owner, name, tag := images.SplitRef(ref)
	if api.ValidName("image", name) != nil || images.ValidTag(tag) != nil {
		return store.Image{}, store.ErrNotFound
	}
	id := u.ID
	if owner != "" {
		ou, err := s.Store.UserByName(owner)
		if err != nil {
			return store.Image{}, store.ErrNotFound
		}
		id = ou.ID
	}
	im, err := s.Store.GetImage(id, name, tag)
	if err != nil {
		return store.Image{}, store.ErrNotFound
	}
	if _, ok := caller.From(ctx); !ok || im.Owner == u.ID {
		return im, nil
	}
	if ok, err := s.sharedWith(u, im); err != nil || !ok {
		return store.Image{}, store.ErrNotFound
	}
	return im, nil
}

// sharedWith says whether u may use im as its owner shared it.
func (s *Service) sharedWith(u store.User, im store.Image) (bool, error) {
	shares, err := s.Store.ImageShares(im.Owner)
	if err != nil {
		return false, err
	}
	var groups []string
	for _, sh := range shares {
		if sh.Name != im.Name {
			continue
		}
		switch sh.Kind {
		case "all":
			return true, nil
		case "user":
			if sh.Who == strconv.FormatInt(u.ID, 10) {
				return true, nil
			}
		case "group":
			if groups == nil {
				if groups, err = s.Store.GroupsOf(u.ID); err != nil {
					return false, err
				}
			}
			if slices.Contains(groups, sh.Who) {
				return true, nil
			}
		}
	}
	return false, nil
}

// imageRef is the engine's name of a user's image: its reference
// (OWNER/NAME:TAG) under the instance's name, so that it is never one of
// the server's images (a user may be named as an image's repository is)
// nor another instance's on the same engine.
func (s *Service) imageRef(im store.Image) string {
	n, _ := s.userName(im.Owner)
	return s.engineRef(images.Ref(n, im.Name, im.Tag))
}

func (s *Service) engineRef(ref string) string { return s.Cfg.Instance + "/" + ref }

func (s *Service) userName(id int64) (string, error) {
	u, err := s.Store.GetUser(id)
	if err != nil {
		return "", fmt.Errorf("the user %d: %w", id, err)
	}
	return u.Name, nil
}

// imageID is what ref names in the server's engine now ("" for nothing).
func (s *Service) imageID(ctx context.Context, ref string) (string, error) {
	ider, ok := s.Driver.(driver.ImageIDer)
	if !ok {
		return "", errors.New("this engine driver cannot tell images' ids")
	}
	return ider.ImageID(ctx, ref)
}

// checkImageCount refuses a new image name:tag past builds.per_user.
func (s *Service) checkImageCount(owner int64, name, tag string) error {
	if s.Cfg.Builds.PerUser <= 0 {
		return nil
	}
	all, err := s.Store.ListImages()
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
	if n >= s.Cfg.Builds.PerUser {
		return tooManyImages(n)
	}
	return nil
}

func tooManyImages(n int) error {
	return conflict("you have %d images, the most builds.per_user allows: remove one first ('paddock image rm')", n)
}

// Images lists the images the caller may use: their own, those shared
// with them; an admin or owner sees every user's.
func (s *Service) Images(ctx context.Context) ([]api.Image, error) {
	u, hasUser := caller.From(ctx)
	all, err := s.Store.ListImages()
	if err != nil {
		return nil, err
	}
	out := []api.Image{}
	for _, im := range all {
		if hasUser && !caller.Sees(u, im.Owner) {
			if ok, err := s.sharedWith(u, im); err != nil || !ok {
				continue
			}
		}
		a, err := s.toAPIImage(ctx, im)
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
func (s *Service) findImage(ctx context.Context, ref string, mine bool) (store.Image, error) {
	u, hasUser := caller.From(ctx)
	all, err := s.Store.ListImages()
	if err != nil {
		return store.Image{}, err
	}
	may := func(im store.Image) bool {
		if !hasUser || caller.Sees(u, im.Owner) {
			return true
		}
		ok, _ := s.sharedWith(u, im)
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
			return store.Image{}, conflict("%q names %d images: give more of its id, or its name", ref, len(found))
		}
	}
	owner, name, tag := images.SplitRef(ref)
	for _, im := range all {
		if im.Name != name || im.Tag != tag || !may(im) {
			continue
		}
		if owner == "" && im.Owner == u.ID || owner != "" && s.imageRef(im) == s.engineRef(images.Ref(owner, name, tag)) {
			return im, nil
		}
		if owner == "" && !hasUser {
			return im, nil
		}
	}
	return store.Image{}, notFound("image", ref)
}

// anyTag is one of the caller's images (an admin's: anyone's) named ref,
// NAME or OWNER/NAME, whatever its tag.
func (s *Service) anyTag(ctx context.Context, ref string) (store.Image, error) {
	u, hasUser := caller.From(ctx)
	owner, name, _ := images.SplitRef(ref)
	all, err := s.Store.ListImages()
	if err != nil {
		return store.Image{}, err
	}
	for _, im := range all {
		if im.Name != name || (hasUser && !caller.Sees(u, im.Owner)) {
			continue
		}
		if on, _ := s.userName(im.Owner); owner == "" && im.Owner == u.ID || owner != "" && on == owner {
			return im, nil
		}
	}
	return store.Image{}, notFound("image", ref)
}

// GetImage is one image the caller sees.
func (s *Service) GetImage(ctx context.Context, ref string) (api.Image, error) {
	im, err := s.findImage(ctx, ref, false)
	if err != nil {
		return api.Image{}, err
	}
	return s.toAPIImage(ctx, im)
}

// RemoveImage removes one of the caller's images (an admin's: anyone's).
// Boxes made from it keep it until they go.
func (s *Service) RemoveImage(ctx context.Context, ref string) (api.Image, error) {
	im, err := s.findImage(ctx, ref, true)
	if err != nil {
		return api.Image{}, err
	}
	out, _ := s.toAPIImage(ctx, im)
	if err := s.Store.DeleteImage(im.Owner, im.Name, im.Tag); err != nil {
		return api.Image{}, err
	}
	if keeper, ok := s.Driver.(driver.ImageKeeper); ok {
		if err := keeper.RemoveImage(ctx, s.imageRef(im)); err != nil && !errors.Is(err, driver.ErrNotFound) {
			s.Log.Warn("removing an image's name", "image", s.imageRef(im), "err", err)
		}
		s.dropImageID(ctx, keeper, im.ID)
	}
	return out, nil
}

// ShareImage sets who else may make boxes from one of the caller's
// images (every tag of its name). Everyone is for an admin or the owner.
func (s *Service) ShareImage(ctx context.Context, ref string, sh api.ImageShares) (api.Image, error) {
	im, err := s.findImage(ctx, ref, true)
	if _, _, tag := images.SplitRef(ref); isNotFound(err) && !strings.HasSuffix(ref, ":"+tag) {
		im, err = s.anyTag(ctx, ref) // a name alone: what is shared is the name
	}
	if err != nil {
		return api.Image{}, err
	}
	if u, ok := caller.From(ctx); ok && sh.Everyone && !u.SeesAll() {
		return api.Image{}, &api.Error{Code: api.CodeForbidden, Message: "only the owner or an admin may share an image with everyone"}
	}
	want := map[store.ImageShare]bool{}
	for _, n := range sh.Users {
		gu, err := s.Store.UserByName(n)
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
	cur, err := s.Store.ImageShares(im.Owner)
	if err != nil {
		return api.Image{}, err
	}
	for _, c := range cur {
		if c.Name == im.Name && !want[c] {
			if err := s.Store.ShareImage(c, false); err != nil {
				return api.Image{}, err
			}
		}
	}
	for w := range want {
		if err := s.Store.ShareImage(w, true); err != nil {
			return api.Image{}, err
		}
	}
	return s.toAPIImage(ctx, im)
}

func (s *Service) toAPIImage(ctx context.Context, im store.Image) (api.Image, error) {
	u, hasUser := caller.From(ctx)
	owner, _ := s.userName(im.Owner)
	out := api.Image{Name: im.Name + ":" + im.Tag, Ref: images.Ref(owner, im.Name, im.Tag), Owner: owner, ID: im.ID, Size: im.Size,
		Dockerfile: im.Dockerfile, ContextDigest: im.ContextDigest, Bases: im.Bases, Project: im.Project, Built: im.Built,
		BuildSeconds: im.BuildTime.Seconds(), Mine: !hasUser || u.ID == im.Owner, SharedWith: []string{}}
	shares, err := s.Store.ImageShares(im.Owner)
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
			n, _ := s.userName(id)
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

func short(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
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

// projectImages makes the images a project's boxes name what the engine
// calls them: a box's image that is one of the project's own image blocks
// (NAME:TAG), or one of the user's images the user may use, becomes its
// engine name, which is what the box is stored with (so that a plan
// compares like with like). The server's images stay as they are. It
// returns the engine names it gave, each true when the project builds it
// (read before any transaction: checkImages, within one, reads no store).
func (s *Service) projectImages(ctx context.Context, spec *api.ProjectSpec) map[string]bool {
	refs := map[string]bool{}
	u, _ := caller.From(ctx)
	uname, err := s.userName(caller.OwnerID(ctx))
	if err != nil {
		return refs
	}
	declared := map[string]bool{}
	for _, im := range spec.Images {
		declared[im.Name+":"+im.Tag] = true
	}
	spec.Boxes = slices.Clone(spec.Boxes) // the caller's spec stays as it was
	for i, b := range spec.Boxes {
		if b.Image == "" || s.allowedImage(b.Image) {
			continue
		}
		owner, name, tag := images.SplitRef(b.Image)
		if owner == "" && declared[name+":"+tag] {
			spec.Boxes[i].Image = s.engineRef(images.Ref(uname, name, tag))
			refs[spec.Boxes[i].Image] = true
			continue
		}
		if im, err := s.usableImage(ctx, u, b.Image); err == nil {
			spec.Boxes[i].Image = s.imageRef(im)
			refs[spec.Boxes[i].Image] = false
		}
	}
	return refs
}

// planImages is what a project's image blocks change: an image not built
// yet (create), or one whose last build had another context or Dockerfile
// (update). The CLI builds them before it applies the rest.
func (s *Service) planImages(ctx context.Context, spec api.ProjectSpec) []api.Change {
	var out []api.Change
	for _, im := range spec.Images {
		addr := "image." + im.Name
		cur, err := s.Store.GetImage(caller.OwnerID(ctx), im.Name, im.Tag)
		if err != nil {
			out = append(out, api.Change{Address: addr, Action: api.ActionCreate,
				Attrs: []api.AttrChange{{Name: "tag", After: strconv.Quote(im.Tag)}, {Name: "context", After: strconv.Quote(im.Context)}}})
			continue
		}
		var attrs []api.AttrChange
		if cur.ContextDigest != im.ContextDigest {
			attrs = append(attrs, api.AttrChange{Name: "context_digest", Before: strconv.Quote(short(cur.ContextDigest)), After: strconv.Quote(short(im.ContextDigest))})
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
func (s *Service) projectImage(ctx context.Context, ref string, refs map[string]bool, applying bool) error {
	if s.allowedImage(ref) {
		return s.checkImage(ctx, ref)
	}
	builds, ok := refs[ref]
	if !ok {
		return s.noImage(ref)
	}
	if builds && !applying {
		return nil
	}
	shown := strings.TrimPrefix(ref, s.Cfg.Instance+"/")
	if ok, err := s.Driver.ImageExists(ctx, ref); err != nil {
		return err
	} else if !ok {
		return s.noImage(shown)
	}
	return nil
}
