package docker

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/moby/client"
	"github.com/vbatts/tar-split/tar/asm"
	"github.com/vbatts/tar-split/tar/storage"

	"github.com/paddock-dev/paddock/appliance/driver"
)

var _ driver.LayerShipper = (*Driver)(nil)

// ErrNoLayerStore is an engine whose layers this driver cannot read from
// its disk (not overlay2, or not on this machine): its snapshots ship
// whole, as SaveSnapshots gives them.
var ErrNoLayerStore = errors.New("the engine's layers cannot be read from this machine")

// layerStore is where the engine keeps images and layers on this
// machine's disk (overlay2's layout).
func (d *Driver) layerStore(ctx context.Context) (string, error) {
	r, err := d.c.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", wrap(err)
	}
	if r.Info.Driver != "overlay2" {
		return "", fmt.Errorf("%w (its storage driver is %s)", ErrNoLayerStore, r.Info.Driver)
	}
	if _, err := os.Stat(filepath.Join(r.Info.DockerRootDir, "image", "overlay2", "layerdb")); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoLayerStore, err)
	}
	return r.Info.DockerRootDir, nil
}

func hexOf(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a sha256 digest", digest)
	}
	return h, nil
}

// SnapshotParts reads a snapshot image's config from the engine's disk
// (checked against the image's ID) and its layers' diff IDs.
func (d *Driver) SnapshotParts(ctx context.Context, id string) (driver.ImageParts, error) {
	root, err := d.layerStore(ctx)
	if err != nil {
		return driver.ImageParts{}, err
	}
	ins, err := d.c.ImageInspect(ctx, d.snapshotRef(id))
	if err != nil {
		return driver.ImageParts{}, wrap(err)
	}
	h, err := hexOf(ins.ID)
	if err != nil {
		return driver.ImageParts{}, err
	}
	cfg, err := os.ReadFile(filepath.Join(root, "image", "overlay2", "imagedb", "content", "sha256", h))
	if err != nil {
		return driver.ImageParts{}, fmt.Errorf("%w: %v", ErrNoLayerStore, err)
	}
	if sum := sha256.Sum256(cfg); hex.EncodeToString(sum[:]) != h {
		return driver.ImageParts{}, fmt.Errorf("the config of snapshot %s on disk is not its image's", id)
	}
	return driver.ImageParts{Config: cfg, Layers: ins.RootFS.Layers, Ref: d.snapshotRef(id)}, nil
}

// chainID is the engine's name of a chain of layers.
func chainID(chain []string) string {
	id := chain[0]
	for _, d := range chain[1:] {
		sum := sha256.Sum256([]byte(id + " " + d))
		id = "sha256:" + hex.EncodeToString(sum[:])
	}
	return id
}

// OpenLayer rebuilds a layer's tar as the engine does for docker save:
// from the tar headers it kept when the layer was made (tar-split) and
// the files of the layer's folder. The caller checks its digest.
func (d *Driver) OpenLayer(ctx context.Context, chain []string) (io.ReadCloser, error) {
	if len(chain) == 0 {
		return nil, errors.New("no layer")
	}
	root, err := d.layerStore(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range chain {
		if _, err := hexOf(c); err != nil {
			return nil, err
		}
	}
	ch, _ := hexOf(chainID(chain))
	dir := filepath.Join(root, "image", "overlay2", "layerdb", "sha256", ch)
	cache, err := os.ReadFile(filepath.Join(dir, "cache-id"))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", chain[len(chain)-1], err)
	}
	cid := strings.TrimSpace(string(cache))
	if cid == "" || strings.ContainsAny(cid, "/.") {
		return nil, fmt.Errorf("layer %s: a bad cache id %q", chain[len(chain)-1], cid)
	}
	f, err := os.Open(filepath.Join(dir, "tar-split.json.gz"))
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", chain[len(chain)-1], err)
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("layer %s's tar headers: %w", chain[len(chain)-1], err)
	}
	rc := asm.NewOutputTarStream(storage.NewPathFileGetter(filepath.Join(root, "overlay2", cid, "diff")), storage.NewJSONUnpacker(gz))
	return closers{rc, []io.Closer{rc, f}}, nil
}

type closers struct {
	io.Reader
	all []io.Closer
}

func (c closers) Close() error {
	var errs []error
	for _, x := range c.all {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// LoadSnapshotParts writes the parts as docker save's archive and loads
// it through LoadSnapshots (and so its checks).
// The layers the engine has already (the box image's, another
// snapshot's: their chains are in its layer store) go empty and unread;
// should one go away before the load takes it, the load fails and is
// tried once more with every layer read.
func (d *Driver) LoadSnapshotParts(ctx context.Context, id string, config []byte, layers []driver.LayerSource) error {
	diffs := make([]string, len(layers))
	for i := range layers {
		diffs[i] = layers[i].Diff
	}
	present := d.presentLayers(ctx, diffs)
	// The chains found present above, and no other, may come empty.
	has := func(chain []string) bool {
		return len(chain) <= present && slices.Equal(chain, diffs[:len(chain)])
	}
	load := func(layers []driver.LayerSource) error {
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(driver.WriteSaveArchive(ctx, pw, d.snapshotRef(id), config, layers))
		}()
		err := d.loadSnapshots(ctx, []string{id}, pr, has)
		pr.CloseWithError(errors.New("load ended"))
		return err
	}
	if present == 0 {
		return load(layers)
	}
	some := slices.Clone(layers)
	for i := range present {
		some[i].Present = true
	}
	if err := load(some); err == nil || ctx.Err() != nil {
		return err
	}
	return load(layers)
}

// presentLayers is how many of a chain's first layers the engine has (0
// when its layer store cannot be read from here).
func (d *Driver) presentLayers(ctx context.Context, diffs []string) int {
	root, err := d.layerStore(ctx)
	if err != nil {
		return 0
	}
	for i := range diffs {
		if _, err := hexOf(diffs[i]); err != nil {
			return i
		}
		ch, _ := hexOf(chainID(diffs[:i+1]))
		if _, err := os.Stat(filepath.Join(root, "image", "overlay2", "layerdb", "sha256", ch, "cache-id")); err != nil {
			return i
		}
	}
	return len(diffs)
}
