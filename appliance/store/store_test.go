package store

import (
	"errors"
	"testing"
	"time"
)

func TestSerialCountsDeclaredChangesOnly(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	serial := func() int64 {
		n, err := s.Serial()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if serial() != 0 {
		t.Fatal("fresh store serial not 0")
	}
	b := Box{Name: "web", Type: "small", Image: "img", Desired: "running", Created: time.Now(), Env: map[string]string{"A": "1"}, Mounts: []Mount{{Drive: "d", Path: "/mnt/d"}}}
	if err := s.Declare(func(tx *Tx) error { return tx.CreateBox(b) }); err != nil {
		t.Fatal(err)
	}
	if serial() != 1 {
		t.Fatal("serial did not move on create")
	}
	if err := s.Declare(func(tx *Tx) error { return tx.CreateBox(b) }); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate create: %v", err)
	}
	if serial() != 1 {
		t.Fatal("a failed transaction moved the serial")
	}
	if err := s.SetObserved("web", "running", ""); err != nil {
		t.Fatal(err)
	}
	if serial() != 1 {
		t.Fatal("observing moved the serial")
	}
	got, err := s.GetBox("web")
	if err != nil || got.Env["A"] != "1" || got.Mounts[0].Path != "/mnt/d" || got.Observed != "running" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	s.Close()

	// Reopening runs no migration twice and keeps the data.
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if serial() != 1 {
		t.Fatal("serial lost on reopen")
	}
	if _, err := s.GetBox("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing box: %v", err)
	}
}

func TestTransactionIsAllOrNothing(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	boom := errors.New("boom")
	err = s.Declare(func(tx *Tx) error {
		if err := tx.CreateDrive(Drive{Name: "d", State: "ready", Created: time.Now()}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if ds, _ := s.ListDrives(); len(ds) != 0 {
		t.Fatalf("half a transaction landed: %v", ds)
	}
}

func TestTokensAndJobs(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddToken("h1", "me", time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := s.TokenName("h1"); err != nil || n != "me" {
		t.Fatalf("TokenName = %q, %v", n, err)
	}
	if _, err := s.TokenName("h2"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	now := time.Now()
	s.AddJob(Job{ID: "j1", Box: "b", Cmd: []string{"echo", "hi"}, State: "running", Started: now})
	code := 3
	s.EndJob("j1", "exited", &code, now)
	j, err := s.GetJob("j1")
	if err != nil || j.State != "exited" || *j.ExitCode != 3 || j.Cmd[1] != "hi" {
		t.Fatalf("job %+v, %v", j, err)
	}
}
