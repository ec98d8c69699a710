// Package shipping keeps boxes' snapshots in the server's object store
// (package objstore), so that they outlive the server they were taken on.
//
// Once a snapshot is taken it is shipped: its images, as the engine saves
// them, stored by content, so that what a box's earlier snapshots, its
// image and other boxes already sent is not sent again. A snapshot's
// `shipped` says where it stands: local (on its server only), shipping,
// shipped. A shipping that fails (the store unreachable, its keys refused)
// leaves the snapshot local with the error, and is tried again on the next
// pass (every ship_interval, and after each snapshot).
//
// A box made from a snapshot whose image its server does not have (the
// engine's images lost with a disk, a box made again on another server)
// fetches it from the store first: the archive is checked chunk by chunk
// and whole against what was stored, then loaded as a move's archive is
// (sanitized: it names nothing but its snapshot).
//
// The archives of snapshots that are gone are removed from the store, and
// then the chunks no archive names any more (an hour after they were
// stored, so that a shipping under way keeps its own).
package shipping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Where a snapshot stands with the store (store.Snapshot.Shipped).
const (
	Local    = "local"
	Shipping = "shipping"
	Shipped  = "shipped"
)

// Store is what the shipper reads and records of snapshots.
type Store interface {
	ListSnapshots(box string) ([]store.Snapshot, error)
	SetSnapshotShipped(id, shipped, errMsg string) error
}

// Engines are the servers' engines, by node name ("" is this server's).
type Engines interface {
	Node(name string) (driver.Driver, bool)
}

// Shipper ships snapshots to the object store and fetches them back.
type Shipper struct {
	Store   Store
	Engines Engines
	Bucket  *objstore.Store
	Log     *slog.Logger

	mu        sync.Mutex // one pass at a time
	lastSweep time.Time
	fetching  sync.Mutex
	begunMu   sync.Mutex
	begun     map[string]bool // fetches under way in the background, by node and snapshot
}

// sweepEvery is how often the store is swept of what no snapshot needs.
const sweepEvery = time.Hour

// sweepGrace is how long a chunk no archive names is kept.
const sweepGrace = time.Hour

// Pass ships every ready snapshot not yet in the store, oldest first, and
// now and then sweeps the store. It returns the first error (each
// snapshot's is recorded on it).
func (s *Shipper) Pass(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.Store.ListSnapshots("")
	if err != nil {
		return err
	}
	var first error
	for _, sn := range all { // oldest first
		if sn.State != "ready" || sn.Shipped == Shipped {
			continue
		}
		if err := s.ship(ctx, sn); err != nil && first == nil {
			first = err
		}
	}
	if time.Since(s.lastSweep) >= sweepEvery {
		if err := s.sweep(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// ship sends one snapshot's images to the store.
func (s *Shipper) ship(ctx context.Context, sn store.Snapshot) error {
	sh, err := s.shipper(sn.Node)
	if err != nil {
		return err
	}
	if err := s.Store.SetSnapshotShipped(sn.ID, Shipping, ""); err != nil {
		return err
	}
	start := time.Now()
	sent, err := s.put(ctx, sh, sn.ID)
	if err != nil {
		err = fmt.Errorf("shipping snapshot %s: %w", sn.ID, err)
		s.Store.SetSnapshotShipped(sn.ID, Local, err.Error())
		s.Log.Warn("snapshot not shipped; tried again later", "snapshot", sn.ID, "err", err)
		return err
	}
	s.Log.Info("snapshot shipped", "snapshot", sn.ID, "bytes", sent.Bytes, "sent", sent.NewBytes,
		"chunks", sent.Chunks, "new_chunks", sent.New, "took", time.Since(start).Round(time.Millisecond))
	return s.Store.SetSnapshotShipped(sn.ID, Shipped, "")
}

// put stores a snapshot: layer by layer where its engine's layers can be
// read from its disk (a layer the store has is not read), else as one
// archive of the engine's save.
func (s *Shipper) put(ctx context.Context, sh driver.SnapshotShipper, id string) (objstore.Sent, error) {
	if ls, ok := sh.(driver.LayerShipper); ok {
		parts, err := ls.SnapshotParts(ctx, id)
		if err == nil {
			return s.putLayers(ctx, ls, id, parts)
		}
		s.Log.Debug("snapshot shipped whole: its layers cannot be read", "snapshot", id, "err", err)
	}
	rc, err := sh.SaveSnapshots(ctx, []string{id})
	if err != nil {
		return objstore.Sent{}, err
	}
	defer rc.Close()
	_, sent, err := s.Bucket.PutArchive(ctx, id, rc, "")
	return sent, err
}

// layered is a snapshot shipped layer by layer: its image's config, as
// the engine keeps it, and its layers' diff IDs, each an archive named
// layerArchive(diff ID).
type layered struct {
	Version int      `json:"version"`
	ID      string   `json:"id"`
	Config  []byte   `json:"config"`
	Layers  []string `json:"layers"`
	// Ref is the image's name on the servers (ImageParts.Ref).
	Ref string `json:"ref,omitempty"`
}

func layeredKey(id string) string { return "snapshots/" + id + ".json" }

// layerArchive names a layer's archive by its diff ID.
func layerArchive(diffID string) string { return "layer-" + strings.TrimPrefix(diffID, "sha256:") }

func (s *Shipper) putLayers(ctx context.Context, ls driver.LayerShipper, id string, parts driver.ImageParts) (objstore.Sent, error) {
	var all objstore.Sent
	for i, l := range parts.Layers {
		name := layerArchive(l)
		if len(name) != len("layer-")+64 {
			return all, fmt.Errorf("snapshot %s: a bad layer %q", id, l)
		}
		if have, err := s.Bucket.HasArchive(ctx, name); err != nil {
			return all, err
		} else if have {
			continue
		}
		rc, err := ls.OpenLayer(ctx, parts.Layers[:i+1])
		if err != nil {
			return all, err
		}
		_, sent, err := s.Bucket.PutArchive(ctx, name, rc, strings.TrimPrefix(l, "sha256:"))
		rc.Close()
		if err != nil {
			return all, err
		}
		all.Bytes += sent.Bytes
		all.Chunks += sent.Chunks
		all.New += sent.New
		all.NewBytes += sent.NewBytes
	}
	js, err := json.Marshal(layered{Version: 2, ID: id, Config: parts.Config, Layers: parts.Layers, Ref: parts.Ref})
	if err != nil {
		return all, err
	}
	return all, s.Bucket.Put(ctx, layeredKey(id), bytes.NewReader(js), int64(len(js)))
}

// shipper is the engine of a node, as a shipper of snapshots.
func (s *Shipper) shipper(node string) (driver.SnapshotShipper, error) {
	d, ok := s.Engines.Node(node)
	if !ok {
		return nil, fmt.Errorf("server %q is not known", node)
	}
	sh, ok := d.(driver.SnapshotShipper)
	if !ok {
		return nil, fmt.Errorf("server %q's engine cannot save or load snapshots", node)
	}
	return sh, nil
}

// ErrNotShipped is a snapshot whose image is neither on the server that
// needs it nor in the store.
var ErrNotShipped = errors.New("not in the object store")

// Fetch makes sure the engine of node has a snapshot's image: it loads it
// from the store when it does not.
func (s *Shipper) Fetch(ctx context.Context, id, node string) error {
	s.fetching.Lock()
	defer s.fetching.Unlock()
	if has, err := s.has(ctx, id, node); err != nil || has {
		return err
	}
	sh, err := s.shipper(node)
	if err != nil {
		return err
	}
	start := time.Now()
	var read int64
	size, err := s.load(ctx, sh, id, node, &read)
	if errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("snapshot %s: its image is not on this server and it is %w", id, ErrNotShipped)
	}
	if err != nil {
		return fmt.Errorf("fetching snapshot %s from the object store: %w", id, err)
	}
	s.Log.Info("snapshot fetched from the object store", "snapshot", id, "node", node, "bytes", size, "read", read, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// has says whether the engine of node has a snapshot's image.
func (s *Shipper) has(ctx context.Context, id, node string) (bool, error) {
	d, ok := s.Engines.Node(node)
	if !ok {
		return false, fmt.Errorf("server %q is not known", node)
	}
	have, err := d.Snapshots(ctx)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(have, func(x driver.SnapshotState) bool { return x.ID == id }), nil
}

// ErrFetching is a snapshot being fetched in the background (Begin).
var ErrFetching = errors.New("being fetched from the object store")

// Begin is Fetch in the background: nil when the engine of node has the
// snapshot's image, else an error wrapping ErrFetching while it is
// fetched (then is called once the fetch ended, whatever its outcome; a
// failure is logged, and the next Begin tries again).
func (s *Shipper) Begin(ctx context.Context, id, node string, then func()) error {
	if has, err := s.has(ctx, id, node); err != nil || has {
		return err
	}
	key := node + "/" + id
	s.begunMu.Lock()
	defer s.begunMu.Unlock()
	if !s.begun[key] {
		if s.begun == nil {
			s.begun = map[string]bool{}
		}
		s.begun[key] = true
		go func() {
			if err := s.Fetch(ctx, id, node); err != nil {
				s.Log.Warn("snapshot not fetched", "snapshot", id, "node", node, "err", err)
			}
			s.begunMu.Lock()
			delete(s.begun, key)
			s.begunMu.Unlock()
			then()
		}()
	}
	return fmt.Errorf("snapshot %s is %w: the box is made once it is here", id, ErrFetching)
}

// load loads a shipped snapshot into an engine: from its layers, or its
// one archive. Its size is the image's; fetched is set to the bytes read
// from the store (the layers the engine has already are not).
func (s *Shipper) load(ctx context.Context, sh driver.SnapshotShipper, id, node string, fetched *int64) (int64, error) {
	b, err := s.Bucket.Get(ctx, layeredKey(id))
	if errors.Is(err, objstore.ErrNotFound) {
		rc, m, err := s.Bucket.OpenArchive(ctx, id)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		*fetched = m.Size
		return m.Size, sh.LoadSnapshots(ctx, []string{id}, rc)
	}
	if err != nil {
		return 0, err
	}
	var l layered
	if err := json.Unmarshal(b, &l); err != nil || l.Version != 2 || l.ID != id {
		return 0, fmt.Errorf("its description in the store cannot be read (version %d): %v", l.Version, err)
	}
	var size int64
	var read atomic.Int64
	sources := make([]driver.LayerSource, len(l.Layers))
	for i, diff := range l.Layers {
		name := layerArchive(diff)
		m, err := s.Bucket.Archive(ctx, name)
		if err != nil {
			return 0, err
		}
		size += m.Size
		sources[i] = driver.LayerSource{Diff: diff, Size: m.Size, Open: func(ctx context.Context) (io.ReadCloser, error) {
			rc, _, err := s.Bucket.OpenArchive(ctx, name)
			if err != nil {
				return nil, err
			}
			return countedReader{rc, &read}, nil
		}}
	}
	defer func() { *fetched = read.Load() }()
	if ls, ok := sh.(driver.LayerShipper); ok {
		return size, ls.LoadSnapshotParts(ctx, id, l.Config, sources)
	}
	// An engine that loads only whole archives (another server's,
	// through its agent): the parts as one, made as it is read.
	if l.Ref == "" {
		return 0, fmt.Errorf("server %q loads whole archives, and the snapshot's description in the store names no image", node)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(driver.WriteSaveArchive(ctx, pw, l.Ref, l.Config, sources))
	}()
	err = sh.LoadSnapshots(ctx, []string{id}, pr)
	pr.CloseWithError(errors.New("load ended"))
	return size, err
}

// sweep removes the archives of snapshots that are gone, then the chunks
// nothing names.
func (s *Shipper) sweep(ctx context.Context) error {
	all, err := s.Store.ListSnapshots("")
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, sn := range all {
		if sn.State != "deleting" {
			live[sn.ID] = true
		}
	}
	// The layers the live snapshots shipped layer by layer name.
	metas, err := s.Bucket.List(ctx, "snapshots/")
	if err != nil {
		return err
	}
	for _, o := range metas {
		id, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, "snapshots/"), ".json")
		if !ok {
			continue
		}
		if !live[id] {
			if err := s.Bucket.Delete(ctx, o.Key); err != nil {
				return err
			}
			continue
		}
		b, err := s.Bucket.Get(ctx, o.Key)
		if err != nil {
			return err
		}
		var l layered
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s in the object store: %w", o.Key, err)
		}
		for _, diff := range l.Layers {
			live[layerArchive(diff)] = true
		}
	}
	n, err := s.Bucket.Sweep(ctx, func(name string) bool { return live[name] }, sweepGrace)
	if err != nil {
		return fmt.Errorf("sweeping the object store: %w", err)
	}
	s.lastSweep = time.Now()
	if n > 0 {
		s.Log.Info("object store swept", "chunks_removed", n)
	}
	return nil
}

// countedReader counts what is read through it.
type countedReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countedReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}
