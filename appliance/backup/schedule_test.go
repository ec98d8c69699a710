package backup

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/store"
)

// failing is a Place whose puts fail (a store cut off), over a folder.
type failing struct{ Folder }

func (f failing) Put(ctx context.Context, name, path string, size int64) error {
	return errors.New("the store does not answer")
}

// Scheduled backups into a folder: each is a whole, encrypted backup
// that restores; the newest Keep are kept; a put that fails removes
// nothing and leaves no file behind, in the place or the state directory;
// the names sort by time, and only backups' names are read back.
func TestScheduleKeepsTheNewest(t *testing.T) {
	src := t.TempDir()
	st, err := store.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	key, err := Passphrase("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	dir := Folder(filepath.Join(t.TempDir(), "backups"))
	clock := time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)
	s := &Schedule{Place: dir, Key: key, Store: st, StateDir: src, Keep: 2, Log: slog.New(slog.DiscardHandler),
		Now: func() time.Time { clock = clock.Add(time.Hour); return clock }}
	ctx := context.Background()
	for range 3 {
		if err := s.Once(ctx); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(string(dir), "notes.txt"), []byte("mine"), 0o600)
	names, err := dir.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"paddock-20261207T210000Z.age", "paddock-20261207T220000Z.age"}
	if !slices.Equal(names, want) {
		t.Fatalf("after three backups with backup_keep 2: %v, want %v", names, want)
	}
	if latest, _ := Latest(ctx, dir); latest != want[1] {
		t.Fatalf("latest: %q", latest)
	}

	s.Place = failing{dir}
	if err := s.Once(ctx); err == nil {
		t.Fatal("a backup whose put failed said nothing")
	}
	if after, _ := dir.List(ctx); !slices.Equal(after, want) {
		t.Fatalf("a failed backup changed the kept ones: %v", after)
	}
	if es, _ := os.ReadDir(src); slices.ContainsFunc(es, func(e os.DirEntry) bool { return filepath.Ext(e.Name()) == ".age" }) {
		t.Fatalf("a failed backup left its file in the state directory: %v", es)
	}

	rc, err := dir.Open(ctx, want[1])
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	dst := filepath.Join(t.TempDir(), "state")
	if err := Restore(rc, key, dst, "", false); err != nil {
		t.Fatal(err)
	}
	back, err := store.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if _, err := back.UserByName("olga"); err != nil {
		t.Fatalf("the restored scheduled backup: %v", err)
	}
	for _, bad := range []string{"../x.age", "notes.txt", "paddock-.age"} {
		if _, err := dir.Open(ctx, bad); err == nil {
			t.Fatalf("%q was opened as a backup", bad)
		}
	}
}
