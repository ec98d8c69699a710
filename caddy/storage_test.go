package caddy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/caddyserver/certmagic"
)

// TestStorageDelete: a folder is removed only while it is empty; files
// and missing keys as Caddy's own storage does.
func TestStorageDelete(t *testing.T) {
	ctx := context.Background()
	s := fileStorage{&certmagic.FileStorage{Path: t.TempDir()}}
	if err := s.Store(ctx, "certificates/local/a/a.crt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "certificates/local/a"); err != nil {
		t.Fatalf("deleting a folder that is not empty: %v, want no error", err)
	}
	if b, err := s.Load(ctx, "certificates/local/a/a.crt"); err != nil || string(b) != "a" {
		t.Fatalf("a folder that was not empty was deleted with its file: %q %v", b, err)
	}
	if err := s.Delete(ctx, "certificates/local/a/a.crt"); err != nil {
		t.Fatal(err)
	}
	if s.Exists(ctx, "certificates/local/a/a.crt") {
		t.Fatal("a file deleted is still there")
	}
	if err := s.Delete(ctx, "certificates/local/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Path, "certificates", "local", "a")); !os.IsNotExist(err) {
		t.Fatalf("an empty folder deleted is still there: %v", err)
	}
	if err := s.Delete(ctx, "certificates/local/missing"); err != nil {
		t.Fatalf("deleting what is not there: %v", err)
	}
}

// TestStorageCleanerRace: sites' folders deleted over and over, as Caddy's
// storage cleaner deletes a site's folder it listed empty, while
// certificates are stored into new sites' folders: every store succeeds
// and every certificate stored is there at the end. Caddy's own storage
// lost certificates with their folder, or failed a store whose folder went
// between its two steps.
func TestStorageCleanerRace(t *testing.T) {
	ctx := context.Background()
	s := fileStorage{&certmagic.FileStorage{Path: t.TempDir()}}
	const sites = 300
	site := func(i int) string { return fmt.Sprintf("certificates/local/s%d.example", i) }
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for i := 0; i < sites; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := s.Delete(ctx, site(i)); err != nil {
					t.Errorf("deleting %s: %v", site(i), err)
					return
				}
			}
		}
	}()
	var failed []string
	for i := 0; i < sites; i++ {
		for _, ext := range []string{".crt", ".key", ".json"} {
			key := site(i) + "/s" + ext
			if err := s.Store(ctx, key, []byte(key)); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", key, err))
			}
		}
	}
	close(done)
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d stores failed, first: %s", len(failed), failed[0])
	}
	lost := 0
	for i := 0; i < sites; i++ {
		for _, ext := range []string{".crt", ".key", ".json"} {
			key := site(i) + "/s" + ext
			if b, err := s.Load(ctx, key); err != nil || string(b) != key {
				lost++
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d files stored are gone", lost, 3*sites)
	}
}
