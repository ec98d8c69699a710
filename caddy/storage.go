package caddy

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	caddycore "github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/certmagic"
)

// The front door keeps its certificates, keys and CA in files, as Caddy's
// file_system storage does and in the same layout, with two differences
// that close a race between Caddy's storage cleaner and an issuance.
//
// The cleaner runs when the TLS app starts (on a fresh server, at once)
// and then daily. It lists each site's folder and removes the folders it
// finds empty, with the whole folder's contents (os.RemoveAll). An
// issuance makes the site's folder first and writes the certificate into
// it after. Met in that order, the folder went under the issuance's write
// ("failed to create temp file: … no such file or directory", and Caddy
// tries again a minute later: a fresh server's first HTTPS minute
// failed), or the certificate, key and metadata just written went with
// the folder (kept in memory, issued again at the next start: for ACME,
// against its rate limits).
//
//   - Deleting a folder removes it only while it is empty: what was
//     stored since the cleaner looked stays, and the delete is not an
//     error (the cleaner would stop cleaning at one).
//   - A store whose folder went between being made and being written
//     makes it again and writes (a few tries).
type fileStorage struct {
	*certmagic.FileStorage
}

// storeTries bounds Store's attempts when its folder goes under it. The
// cleaner removes a folder once per pass, so a second attempt is enough
// against it; the rest are margin.
const storeTries = 5

// Store puts value at key, making its folder again if it was removed
// between the two steps of a store.
func (s fileStorage) Store(ctx context.Context, key string, value []byte) error {
	var err error
	for i := 0; i < storeTries; i++ {
		err = s.FileStorage.Store(ctx, key, value)
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return err
}

// Delete removes key: a file, or a folder only while it is empty.
func (s fileStorage) Delete(_ context.Context, key string) error {
	name := s.Filename(key)
	info, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return os.Remove(name)
	}
	err = os.Remove(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}

// storageModule is the Caddy module of fileStorage.
type storageModule struct {
	// Root is the storage's folder.
	Root string `json:"root,omitempty"`
}

// storageModuleName is the module's name in the configuration.
const storageModuleName = "paddock_file_system"

func init() {
	caddycore.RegisterModule(storageModule{})
}

// CaddyModule says what the module is.
func (storageModule) CaddyModule() caddycore.ModuleInfo {
	return caddycore.ModuleInfo{
		ID:  "caddy.storage." + storageModuleName,
		New: func() caddycore.Module { return new(storageModule) },
	}
}

// CertMagicStorage gives the storage Caddy uses.
func (m storageModule) CertMagicStorage() (certmagic.Storage, error) {
	return fileStorage{&certmagic.FileStorage{Path: m.Root}}, nil
}

var _ caddycore.StorageConverter = storageModule{}
