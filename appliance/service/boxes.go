package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/quota"
	"github.com/paddock-dev/paddock/appliance/store"
)

// CreateBox declares a box and makes it run.
func (s *Service) CreateBox(ctx context.Context, p api.BoxPost) (api.Box, error) {
	b, err := s.newBox(p)
	if err != nil {
		return api.Box{}, err
	}
	b.Owner = caller.OwnerID(ctx)
	t0 := time.Now()
	img, own, err := s.boxImage(ctx, b.Image)
	if err != nil {
		return api.Box{}, api.Invalid("image", "%v", err)
	}
	if own {
		// Users' images are on this server's engine only.
		if p.Node != "" && p.Node != s.LocalNodeName() {
			return api.Box{}, api.Invalid("node", "a box made from a user's image (%s) goes on %s, where the image is", img, s.LocalNodeName())
		}
		p.Node, b.Image = s.LocalNodeName(), img
	}
	t1 := time.Now()
	claimed := false
	err = s.Store.Declare(func(tx *store.Tx) error {
		claimed = false
		for _, m := range b.Mounts {
			d, err := tx.GetDrive(m.Drive)
			if errors.Is(err, store.ErrNotFound) || (err == nil && (d.State != "ready" || !caller.Visible(ctx, d.Owner))) {
				return api.Invalid("mounts", "no drive named %q: make it first with 'paddock drive new %s'", m.Drive, m.Drive)
			}
			if err != nil {
				return err
			}
		}
		if err := s.CheckPolicy(ctx, tx, b.Policy); err != nil {
			return err
		}
		var err error
		if claimed, err = s.TakePool(tx, &b, p.Node); err != nil {
			return err
		}
		if !claimed {
			if err := s.PlaceOn(tx, &b, p.Node); err != nil {
				return err
			}
		}
		return s.DeclareBox(tx, b)
	})
	if err == nil && claimed {
		if s.claimCut != nil {
			return api.Box{}, s.claimCut()
		}
		t2 := time.Now()
		if err := s.keeper().SettleClaim(ctx, b); err != nil {
			return api.Box{}, err
		}
		s.Log.Debug("claim", "box", b.Name, "image", t1.Sub(t0), "declare", t2.Sub(t1), "settle", time.Since(t2))
		return s.GetBox(b.Name)
	}
	return s.Settle(ctx, b.Name, err, "box."+b.Name, "volume.boxdata."+b.Name)
}

// DeclareBox declares b, saying why a name cannot be had or a member may
// have no more boxes.
func (s *Service) DeclareBox(tx *store.Tx, b store.Box) error {
	q, err := s.quotaOf(tx, b.Owner)
	if err != nil {
		return err
	}
	if err := q.TypeAllowed(b.Type); err != nil {
		return err
	}
	if err := q.CheckOwned(tx, b.Owner, "boxes"); err != nil {
		return err
	}
	if b.Desired == "running" {
		if err := q.CheckRunning(tx, b.Owner, b.Name); err != nil {
			return err
		}
	}
	// One answer whoever holds the name (the caller, another user, a
	// removed box still being cleaned up): it says nothing of whose it is.
	switch err := tx.CreateBox(b); {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrRemoving):
		return api.Conflict("the box name %q is taken (a box removed a moment ago keeps its name until it is cleaned up); choose another", b.Name)
	default:
		return err
	}
}

// CheckLimit refuses one more box or drive to a member who has the most
// their quota allows, naming it.
func (s *Service) CheckLimit(tx *store.Tx, owner int64, what string) error {
	q, err := s.quotaOf(tx, owner)
	if err != nil {
		return err
	}
	return q.CheckOwned(tx, owner, what)
}

// NoImage is api.ErrNoImage for ref, with what a box may be made from: the
// same for every ref, so it tells nothing of ref.
func (s *Service) NoImage(ref string) error {
	return fmt.Errorf("image %q %w: boxes are made from %s (the first is the default), or from your own images ('paddock images')", ref, api.ErrNoImage, strings.Join(s.ServerImages(), ", "))
}

// ServerImages are the images of the configuration any box may be made
// from: the default first.
func (s *Service) ServerImages() []string {
	images := []string{s.Cfg.Image}
	for _, im := range s.Cfg.Images {
		if !slices.Contains(images, im) {
			images = append(images, im)
		}
	}
	return images
}

// CheckImage says whether a box may be made from ref: only the configured
// default and the images listed in the configuration, by exactly those
// names, and only when the engine has them. Everything else (an image ID
// or its prefix, a digest, another user's snapshot image, any other image
// on the engine) gets the same answer as an image that does not exist.
// Boxes made from snapshots do not come here: a snapshot is named by its
// id and checked against the caller's own snapshots.
func (s *Service) CheckImage(ctx context.Context, ref string) error {
	if !s.AllowedImage(ref) {
		return s.NoImage(ref)
	}
	ok, err := s.Driver.ImageExists(ctx, ref)
	if err != nil {
		return err
	}
	if !ok {
		return s.NoImage(ref)
	}
	return nil
}

// boxImage is the image a box the caller names ref is made from: one of
// the server's (checkImage), or a user's own image the caller may use
// (own true, img its server name OWNER/NAME:TAG). Anything else, by name,
// id or prefix, gets checkImage's one answer.
func (s *Service) boxImage(ctx context.Context, ref string) (img string, own bool, err error) {
	if s.AllowedImage(ref) {
		return ref, false, s.CheckImage(ctx, ref)
	}
	u, _ := caller.From(ctx)
	if im, err := s.UsableImage(ctx, u, ref); err == nil {
		img = s.ImageRef(im)
		if ok, err := s.Driver.ImageExists(ctx, img); err != nil || !ok {
			return "", false, s.NoImage(ref)
		}
		return img, true, nil
	}
	return "", false, s.NoImage(ref)
}

// newBox validates a BoxPost and fills in defaults.
func (s *Service) newBox(p api.BoxPost) (store.Box, error) {
	if p.Name == "" {
		n, err := s.generateName()
		if err != nil {
			return store.Box{}, err
		}
		p.Name = n
	}
	if err := api.ValidName("box", p.Name); err != nil {
		return store.Box{}, err
	}
	if p.Type == "" {
		p.Type = "small"
	}
	if err := api.ValidType(p.Type); err != nil {
		return store.Box{}, err
	}
	ttl, err := api.ParseTTL(p.TTL)
	if err != nil {
		return store.Box{}, err
	}
	idle, err := api.ParseIdleStop(p.IdleStop)
	if err != nil {
		return store.Box{}, err
	}
	if p.Image == "" {
		p.Image = s.Cfg.Image
	}
	seen := map[string]bool{}
	var mounts []store.Mount
	for _, m := range p.Mounts {
		if err := api.ValidMount(m); err != nil {
			return store.Box{}, err
		}
		if seen[m.Path] {
			return store.Box{}, api.Invalid("mounts", "two drives are mounted at %s", m.Path)
		}
		seen[m.Path] = true
		mounts = append(mounts, store.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	if err := api.ValidBuckets(p.Buckets, seen); err != nil {
		return store.Box{}, err
	}
	for k := range p.Env {
		if err := api.ValidEnvName(k); err != nil {
			return store.Box{}, err
		}
	}
	for _, labels := range []map[string]string{p.NodeLabels, p.Labels} {
		for k, v := range labels {
			if err := api.ValidNodeLabel(k, v); err != nil {
				return store.Box{}, err
			}
		}
	}
	now := s.now()
	b := store.Box{
		Name: p.Name, Type: p.Type, Image: p.Image, TTL: ttl, Mounts: mounts, Buckets: StoreBuckets(p.Buckets), Env: p.Env,
		Desired: "running", Created: now, Policy: p.Policy, Desktop: s.Cfg.DesktopDefault, NodeLabels: p.NodeLabels,
		Labels: p.Labels, IdleStop: idle,
	}
	if b.Policy == "" {
		b.Policy = api.PolicyAllowAll
	}
	if p.Desktop != nil {
		b.Desktop = *p.Desktop
	}
	if ttl > 0 {
		exp := now.Add(ttl)
		b.ExpiresAt = &exp
	}
	return b, nil
}

// GetBox returns one box.
func (s *Service) GetBox(name string) (api.Box, error) {
	b, err := s.Store.GetBox(name)
	if errors.Is(err, store.ErrNotFound) {
		return api.Box{}, api.NotFound("box", name)
	}
	if err != nil {
		return api.Box{}, err
	}
	out := toAPIBox(b, s.Cfg.Types)
	if u, err := s.Store.GetUser(b.Owner); err == nil {
		out.Owner = u.Name
	}
	out.Node = s.boxNode(b.Node)
	return out, nil
}

// ListBoxes returns the boxes the user of ctx sees.
func (s *Service) ListBoxes(ctx context.Context) ([]api.Box, error) {
	bs, err := s.Store.ListBoxes()
	if err != nil {
		return nil, err
	}
	out := make([]api.Box, 0, len(bs))
	names := s.OwnerNames()
	local := s.boxNode("") // one look at the nodes for the whole list
	nodeOf := func(n string) string {
		if n == "" {
			return local
		}
		return n
	}
	shared, err := s.grantsOf(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range bs {
		access := ""
		if !caller.Visible(ctx, b.Owner) {
			if access = shared[b.Name]; access == "" {
				continue
			}
		}
		ab := toAPIBox(b, s.Cfg.Types)
		ab.Access = access
		ab.Owner = names[b.Owner]
		ab.Node = nodeOf(b.Node)
		out = append(out, ab)
	}
	return out, nil
}

// OwnerNames maps user ids to names (empty when the store cannot say:
// the owner's name is a courtesy, not a check).
func (s *Service) OwnerNames() map[int64]string {
	us, err := s.Store.Users()
	m := map[int64]string{}
	if err != nil {
		return m
	}
	for _, u := range us {
		m[u.ID] = u.Name
	}
	return m
}

// UpdateBox changes one declared box in a transaction.
func (s *Service) UpdateBox(name string, fn func(tx *store.Tx, b *store.Box) error) error {
	return s.Store.Declare(func(tx *store.Tx) error {
		b, err := tx.GetBox(name)
		if errors.Is(err, store.ErrNotFound) {
			return api.NotFound("box", name)
		}
		if err != nil {
			return err
		}
		if err := fn(tx, &b); err != nil {
			return err
		}
		return tx.UpdateBox(b)
	})
}

// addSnapshot declares a pending snapshot of a box with a fresh id, and lets
// the box's oldest go beyond snapshot_keep.
func (s *Service) addSnapshot(tx *store.Tx, box, reason string) (store.Snapshot, error) {
	base := box + "-" + s.now().Format("20060102-150405")
	for i := 1; ; i++ {
		id := base
		if i > 1 {
			id = fmt.Sprintf("%s-%d", base, i)
		}
		if _, err := tx.GetSnapshot(id); errors.Is(err, store.ErrNotFound) {
			sn := store.Snapshot{ID: id, Box: box, Reason: reason, State: "pending", Created: s.now()}
			if err := tx.AddSnapshot(sn); err != nil {
				return sn, err
			}
			if s.Cfg.SnapshotKeep > 0 {
				return sn, tx.PruneSnapshots(box, s.Cfg.SnapshotKeep)
			}
			return sn, nil
		} else if err != nil {
			return store.Snapshot{}, err
		}
	}
}

// StopBox snapshots a running box's filesystem and stops it. reason is
// recorded on the snapshot ("stop", "ttl").
func (s *Service) StopBox(ctx context.Context, name, reason string) (api.Box, error) {
	var snap string
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		if b.Desired == "stopped" {
			if b.Slept {
				// Stopped by hand now: its next use does not start it.
				b.Slept, b.Note = false, ""
			}
			return nil
		}
		b.Desired = "stopped"
		if reason == "ttl" && b.ExpiresAt != nil {
			b.Note = fmt.Sprintf("stopped at %s: its time to live (%s) ran out; 'paddock start %s' starts it again, for %s more",
				b.ExpiresAt.UTC().Format(time.RFC3339), b.TTL, name, b.TTL)
		}
		if b.Observed == "running" || b.Observed == "stopped" {
			sn, err := s.addSnapshot(tx, name, reason)
			snap = sn.ID
			return err
		}
		return nil
	})
	addrs := []string{"box." + name}
	if snap != "" {
		addrs = append(addrs, "snapshot."+snap)
	}
	return s.Settle(ctx, name, err, addrs...)
}

// StartBox starts a stopped box; its TTL starts again.
func (s *Service) StartBox(ctx context.Context, name string) (api.Box, error) {
	return s.startBox(ctx, name, false)
}

// startBox starts a stopped box; its TTL starts again unless keepTTL (a
// wake on use: a TTL ends a box whatever its use). A start counts as use.
func (s *Service) startBox(ctx context.Context, name string, keepTTL bool) (api.Box, error) {
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		if b.Desired == "running" {
			return nil
		}
		if err := s.checkRunning(tx, b.Owner, b.Name); err != nil {
			return err
		}
		if b.DiskStopped {
			// Stopped for its disk: it gets a grace to free space.
			s.memMu.Lock()
			if s.diskGrace == nil {
				s.diskGrace = map[string]time.Time{}
			}
			s.diskGrace[name] = s.now()
			s.memMu.Unlock()
		}
		b.Desired, b.Note, b.Slept, b.DiskStopped = "running", "", false, false
		if b.TTL > 0 && !keepTTL {
			exp := s.now().Add(b.TTL)
			b.ExpiresAt = &exp
		}
		return nil
	})
	if err == nil {
		s.touch(name)
	}
	return s.Settle(ctx, name, err, "box."+name)
}

// RemoveBox removes a box, its container, its /var/lib/docker volume and its
// snapshots (a snapshot stays while a forked box is made from it). Drives
// are kept.
func (s *Service) RemoveBox(ctx context.Context, name string) error {
	err := s.Store.Declare(func(tx *store.Tx) error {
		if err := tx.DeleteBox(name); errors.Is(err, store.ErrNotFound) {
			return api.NotFound("box", name)
		} else if err != nil {
			return err
		}
		return tx.MarkSnapshotsDeleting(name)
	})
	if err != nil {
		return err
	}
	return s.ReconcileFor(ctx, "box."+name, "volume.boxdata."+name)
}

// Snapshot takes a snapshot of a box's filesystem now.
func (s *Service) Snapshot(ctx context.Context, name string) (api.Snapshot, error) {
	var sn store.Snapshot
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		if b.Observed != "running" && b.Observed != "stopped" {
			return api.Conflict("box %q has no filesystem yet (status %s)", name, b.Observed)
		}
		var err error
		sn, err = s.addSnapshot(tx, name, "manual")
		return err
	})
	if err != nil {
		return api.Snapshot{}, err
	}
	rerr := s.ReconcileFor(ctx, "snapshot."+sn.ID)
	out, err := s.getSnapshot(sn.ID)
	if err != nil {
		return out, err
	}
	return out, rerr
}

func (s *Service) getSnapshot(id string) (api.Snapshot, error) {
	all, err := s.Store.ListSnapshots("")
	if err != nil {
		return api.Snapshot{}, err
	}
	for _, sn := range all {
		if sn.ID == id {
			return sn.API(), nil
		}
	}
	return api.Snapshot{}, api.NotFound("snapshot", id)
}

// Snapshots lists a box's snapshots, oldest first (tombstones left out).
func (s *Service) Snapshots(name string) ([]api.Snapshot, error) {
	if _, err := s.GetBox(name); err != nil {
		return nil, err
	}
	sns, err := s.Store.ListSnapshots(name)
	if err != nil {
		return nil, err
	}
	out := []api.Snapshot{}
	for _, sn := range sns {
		if sn.State != "deleting" {
			out = append(out, sn.API())
		}
	}
	return out, nil
}

// readySnapshot finds a usable snapshot of box: the named one, or the newest.
func readySnapshot(tx *store.Tx, box, id string) (store.Snapshot, error) {
	if id == "" {
		sn, err := tx.NewestSnapshot(box)
		if errors.Is(err, store.ErrNotFound) {
			return sn, api.Conflict("box %q has no snapshots", box)
		}
		return sn, err
	}
	sn, err := tx.GetSnapshot(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sn.Box != box) {
		return sn, &api.Error{Code: api.CodeNotFound, Field: "snapshot", Message: fmt.Sprintf("box %q has no snapshot %q", box, id)}
	}
	if err == nil && sn.State != "ready" && sn.State != "pending" {
		return sn, api.Conflict("snapshot %q is %s", id, sn.State)
	}
	return sn, err
}

// Restore replaces a box's filesystem with a snapshot's. Drives and the
// box's /var/lib/docker volume are untouched.
func (s *Service) Restore(ctx context.Context, name, snapshot string) (api.Box, error) {
	var before string
	err := s.UpdateBox(name, func(tx *store.Tx, b *store.Box) error {
		sn, err := readySnapshot(tx, name, snapshot)
		if err != nil {
			return err
		}
		if sn.Node != b.Node {
			return api.Conflict("snapshot %s is on %s, and box %q is on %s now (it moved): restore a snapshot taken since, or fork this one ('paddock fork %s --snapshot %s')",
				sn.ID, s.NodeDisplay(sn.Node), name, s.NodeDisplay(b.Node), name, sn.ID)
		}
		b.From = sn.ID
		// What the restore replaces is kept first, as a snapshot of its
		// own: a restore loses nothing. The box names its new source
		// before that snapshot may prune the oldest, so that the source
		// is never pruned.
		if b.Observed == "running" || b.Observed == "stopped" {
			if err := tx.UpdateBox(*b); err != nil {
				return err
			}
			pre, err := s.addSnapshot(tx, name, "restore")
			before = pre.ID
			return err
		}
		return nil
	})
	addrs := []string{"box." + name}
	if before != "" {
		addrs = append([]string{"snapshot." + before}, addrs...)
	}
	return s.Settle(ctx, name, err, addrs...)
}

// Fork makes a new box from a snapshot of src: the named one, or one taken
// now. The new box has the source's type, image, mounts and environment,
// and its own TTL clock.
func (s *Service) Fork(ctx context.Context, src string, p api.ForkPost) (api.Box, error) {
	srcBox, err := s.Store.GetBox(src)
	if errors.Is(err, store.ErrNotFound) || (err == nil && !caller.Visible(ctx, srcBox.Owner)) {
		return api.Box{}, api.NotFound("box", src)
	} else if err != nil {
		return api.Box{}, err
	}
	if p.Node != "" {
		return s.forkOnto(ctx, srcBox, p)
	}
	post := api.BoxPost{Name: p.Name, Type: srcBox.Type, Image: srcBox.Image, Env: srcBox.Env, Policy: srcBox.Policy, Desktop: &srcBox.Desktop}
	if srcBox.TTL > 0 {
		post.TTL = fmt.Sprint(int64(srcBox.TTL / time.Second))
	}
	for _, m := range srcBox.Mounts {
		post.Mounts = append(post.Mounts, api.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	post.Buckets = APIBuckets(srcBox.Buckets)
	nb, err := s.newBox(post)
	if err != nil {
		return api.Box{}, err
	}
	nb.Owner = caller.OwnerID(ctx)
	var snapID string
	err = s.Store.Declare(func(tx *store.Tx) error {
		var sn store.Snapshot
		var err error
		if p.Snapshot != "" {
			sn, err = readySnapshot(tx, src, p.Snapshot)
		} else {
			if srcBox.Observed != "running" && srcBox.Observed != "stopped" {
				return api.Conflict("box %q has no filesystem to fork yet (status %s)", src, srcBox.Observed)
			}
			sn, err = s.addSnapshot(tx, src, "fork")
		}
		if err != nil {
			return err
		}
		snapID = sn.ID
		nb.From = sn.ID
		if err := s.place(tx, &nb); err != nil {
			return err
		}
		if err := s.DeclareBox(tx, nb); err != nil {
			return err
		}
		return nil
	})
	return s.Settle(ctx, nb.Name, err, "snapshot."+snapID, "box."+nb.Name)
}

// ExpireTTLs stops, with a snapshot, every running box whose TTL has run
// out, and returns when the next one runs out (zero if none).
func (s *Service) ExpireTTLs(ctx context.Context) (time.Time, error) {
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return time.Time{}, err
	}
	now := s.now()
	var next time.Time
	var errs []error
	for _, b := range boxes {
		if b.Desired != "running" || b.ExpiresAt == nil {
			continue
		}
		if !b.ExpiresAt.After(now) {
			s.Log.Info("ttl expired, stopping", "box", b.Name, "expired", b.ExpiresAt)
			if _, err := s.StopBox(ctx, b.Name, "ttl"); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if next.IsZero() || b.ExpiresAt.Before(next) {
			next = *b.ExpiresAt
		}
	}
	return next, errors.Join(errs...)
}

// diskGrace is how long a box started again after being stopped for its
// disk has to free space: five checks, and at least disk_grace.
func diskGrace(cfg config.Config) time.Duration { return max(5*cfg.DiskCheckInterval, cfg.DiskGrace) }

// CheckDisk measures what each running box has written and stops those
// past their type's disk_gib, with a note that says why. It takes no
// snapshot: what the box wrote stays in the stopped box, and a commit
// would write all of it a second time on a disk that is filling.
func (s *Service) CheckDisk(ctx context.Context) error {
	if !driver.DiskUsage.Has(s.Driver) {
		return nil
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range boxes {
		limit := s.Cfg.Types[b.Type].DiskGiB
		if b.Desired != "running" || b.Observed != "running" || limit <= 0 {
			continue
		}
		s.memMu.Lock()
		started, grace := s.diskGrace[b.Name]
		graceOver := grace && s.now().Sub(started) >= diskGrace(s.Cfg)
		if graceOver {
			delete(s.diskGrace, b.Name)
			grace = false
		}
		s.memMu.Unlock()
		if grace {
			continue
		}
		used, err := driver.DiskUsage.Do(ctx, s.Driver, b.Key())
		if err == nil {
			s.noteDisk(b.Name, used)
		}
		within := err == nil && float64(used) <= limit*(1<<30)
		if graceOver && err == nil {
			s.Log.Info("disk grace over", "box", b.Name, "bytes", used, "disk_gib", limit, "within", within)
		}
		if err != nil || within {
			continue
		}
		note := fmt.Sprintf("stopped at %s: it had written %.2f GiB, past types.%s.disk_gib = %g; start it and free space, or give it a larger type",
			s.now().UTC().Format(time.RFC3339), float64(used)/(1<<30), b.Type, limit)
		s.Log.Warn("box past its disk bound, stopping", "box", b.Name, "bytes", used, "disk_gib", limit)
		err = s.UpdateBox(b.Name, func(_ *store.Tx, sb *store.Box) error {
			sb.Desired, sb.Note, sb.DiskStopped = "stopped", note, true
			return nil
		})
		if _, err := s.Settle(ctx, b.Name, err, "box."+b.Name); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, s.checkDrives(ctx))
	return errors.Join(errs...)
}

// checkDrives measures what each member's drives hold together and,
// past limits.drive_gib, stops the member's running boxes that mount one
// of them (out of a start's grace), with a note that says why: a drive
// is written only through a box, so this is what stops it growing. It
// takes no snapshot, as for a box's own disk.
func (s *Service) checkDrives(ctx context.Context) error {
	users, err := s.Store.Users()
	if err != nil {
		return err
	}
	// The members whose quota bounds their drives.
	member := map[int64]bool{}
	quotas := map[int64]quota.Quota{}
	for _, u := range users {
		q, err := s.quotaOf(s.Store, u.ID)
		if err != nil {
			return err
		}
		member[u.ID], quotas[u.ID] = q.Member && q.DriveGiB > 0, q
	}
	drives, err := s.Store.ListDrives()
	if err != nil {
		return err
	}
	held := map[int64]int64{}
	ownerOf := map[string]int64{}
	for _, d := range drives {
		if !member[d.Owner] {
			continue
		}
		ownerOf[d.Name] = d.Owner
		if n, err := driver.VolumeUsage.Do(ctx, s.Driver, driver.VolumeRef{Kind: driver.KindDrive, Name: d.Name}); err == nil {
			held[d.Owner] += n
		}
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range boxes {
		n, q := held[b.Owner], quotas[b.Owner]
		limit := q.DriveGiB
		if !member[b.Owner] || float64(n) <= limit*(1<<30) || b.Desired != "running" || b.Observed != "running" || s.inDiskGrace(b.Name) {
			continue
		}
		mounts := false
		for _, m := range b.Mounts {
			mounts = mounts || ownerOf[m.Drive] == b.Owner
		}
		if !mounts {
			continue
		}
		note := fmt.Sprintf("stopped at %s: your drives hold %.2f GiB, past %s; start it and free space on a drive, or remove one (or %s)",
			s.now().UTC().Format(time.RFC3339), float64(n)/(1<<30), q.Source("drive_gib", limit), q.Raise("drive_gib"))
		s.Log.Warn("a member's drives past their bound, stopping a box that mounts one", "box", b.Name, "bytes", n, "drive_gib", limit)
		err := s.UpdateBox(b.Name, func(_ *store.Tx, sb *store.Box) error {
			sb.Desired, sb.Note, sb.DiskStopped = "stopped", note, true
			return nil
		})
		if _, err := s.Settle(ctx, b.Name, err, "box."+b.Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// inDiskGrace says whether the box was started again after a disk stop
// less than its grace ago.
func (s *Service) inDiskGrace(name string) bool {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	started, ok := s.diskGrace[name]
	return ok && s.now().Sub(started) < diskGrace(s.Cfg)
}

func (s *Service) GetDrive(ctx context.Context, name string) (api.Drive, error) {
	ds, err := s.ListDrives(ctx)
	if err != nil {
		return api.Drive{}, err
	}
	for _, d := range ds {
		if d.Name == name {
			return d, nil
		}
	}
	return api.Drive{}, api.NotFound("drive", name)
}

// ListDrives lists the drives the user of ctx sees and the boxes that
// mount each.
func (s *Service) ListDrives(ctx context.Context) ([]api.Drive, error) {
	ds, err := s.Store.ListDrives()
	if err != nil {
		return nil, err
	}
	boxes, err := s.Store.ListBoxes()
	if err != nil {
		return nil, err
	}
	out := []api.Drive{}
	for _, d := range ds {
		if !caller.Visible(ctx, d.Owner) {
			continue
		}
		out = append(out, api.Drive{Name: d.Name, State: d.State, Created: d.Created, UsedBy: store.UsedBy(boxes, d.Name), Project: d.Project, Size: d.Size, Labels: d.Labels, Node: s.boxNode(d.Node)})
	}
	return out, nil
}

// SetTTL gives a box a new TTL counted from now ("" or "0": none); a
// running box then stops when it runs out. A Boxfile's next apply sets
// its own TTL again.
func (s *Service) SetTTL(ctx context.Context, name, ttl string) (api.Box, error) {
	d, err := api.ParseTTL(ttl)
	if err != nil {
		return api.Box{}, err
	}
	err = s.UpdateBox(name, func(_ *store.Tx, b *store.Box) error {
		b.TTL = d
		b.ExpiresAt = nil
		if d > 0 && b.Desired == "running" {
			exp := s.now().Add(d)
			b.ExpiresAt = &exp
		}
		return nil
	})
	if err != nil {
		return api.Box{}, err
	}
	return s.GetBox(name)
}
