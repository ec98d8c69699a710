package store

import (
	"errors"
	"fmt"
	"sync"
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
	u, err := s.CreateUser(User{Name: "ann", Role: RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(User{Name: "ann", Role: RoleMember}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second user ann: %v", err)
	}
	if err := s.AddToken(Token{Hash: "h1", Name: "me", UserID: u.ID, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if tk, tu, err := s.LookupToken("h1", time.Now()); err != nil || tk.Name != "me" || tu.Name != "ann" || tk.Kind != TokenAPI {
		t.Fatalf("LookupToken = %+v %+v, %v", tk, tu, err)
	}
	if _, _, err := s.LookupToken("h2", time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Minute)
	s.AddToken(Token{Hash: "h3", Name: "session", UserID: u.ID, Kind: TokenSession, Created: time.Now(), Expires: &exp})
	if _, _, err := s.LookupToken("h3", exp); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired session is accepted: %v", err)
	}
	if err := s.DeleteUser(u.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LookupToken("h1", time.Now()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a removed user's token is accepted: %v", err)
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

func TestLinksAreSingleUse(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	s.AddLink(Link{Hash: "old", Kind: LinkSetup, Role: RoleOwner, Created: now, Expires: now.Add(time.Hour)})
	s.AddLink(Link{Hash: "s", Kind: LinkSetup, Role: RoleOwner, Created: now, Expires: now.Add(time.Hour)})
	s.AddLink(Link{Hash: "i", Kind: LinkInvite, Role: RoleMember, Created: now, Expires: now.Add(time.Hour)})
	s.AddLink(Link{Hash: "x", Kind: LinkInvite, Role: RoleMember, Created: now, Expires: now.Add(time.Minute)})
	if _, err := s.RedeemLink("old", now, User{Name: "a"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a replaced setup link works: %v", err)
	}
	if _, err := s.RedeemLink("x", now.Add(2*time.Minute), User{Name: "a"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an expired link works: %v", err)
	}
	u, err := s.RedeemLink("s", now, User{Name: "boss"})
	if err != nil || u.Role != RoleOwner {
		t.Fatalf("setup: %+v %v", u, err)
	}
	if _, err := s.RedeemLink("s", now, User{Name: "boss2"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("setup link used twice: %v", err)
	}
	s.AddLink(Link{Hash: "s2", Kind: LinkSetup, Role: RoleOwner, Created: now, Expires: now.Add(time.Hour)})
	if _, err := s.RedeemLink("s2", now, User{Name: "boss3"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second owner by setup link: %v", err)
	}
	if _, err := s.RedeemLink("i", now, User{Name: "boss"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("an invite takes a used name: %v", err)
	}
	// The failed redemption rolled back: the invite still works.
	if u, err := s.RedeemLink("i", now, User{Name: "mem"}); err != nil || u.Role != RoleMember {
		t.Fatalf("invite: %+v %v", u, err)
	}
}

// Every insert, update and delete of a watched table moves Seen (the
// events stream reads the tables only when it moved); other writes do not.
func TestSeenMovesOnEveryWriteToAWatchedTable(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := func() int64 {
		n, err := s.Seen()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	now := time.Now()
	var uid int64
	writes := map[string][]func() error{
		"boxes": {
			func() error {
				return s.Declare(func(tx *Tx) error {
					return tx.CreateBox(Box{Name: "web", Type: "small", Image: "img", Desired: "running", Created: now})
				})
			},
			func() error { return s.SetObserved("web", "running", "") },
			func() error { return s.Declare(func(tx *Tx) error { return tx.DeleteBox("web") }) },
		},
		"drives": {
			func() error {
				return s.Declare(func(tx *Tx) error { return tx.CreateDrive(Drive{Name: "dr", State: "ready", Created: now}) })
			},
			func() error { return s.Declare(func(tx *Tx) error { return tx.SetDriveState("dr", "deleting") }) },
			func() error { return s.ForgetDrive("dr") },
		},
		"snapshots": {
			func() error {
				return s.Declare(func(tx *Tx) error {
					return tx.AddSnapshot(Snapshot{ID: "s1", Box: "web", Reason: "stop", State: "pending", Created: now})
				})
			},
			func() error { return s.SetSnapshotState("s1", "ready", "") },
			func() error { return s.Declare(func(tx *Tx) error { return tx.MarkSnapshotsDeleting("web") }) },
			func() error { return s.ForgetSnapshot("s1") },
		},
		"jobs": {
			func() error {
				return s.AddJob(Job{ID: "j1", Box: "web", Cmd: []string{"true"}, State: "running", Started: now})
			},
			func() error { code := 0; return s.EndJob("j1", "exited", &code, now) },
		},
		"users": {
			func() error {
				u, err := s.CreateUser(User{Name: "ann", Role: RoleMember, Created: now})
				uid = u.ID
				return err
			},
			func() error { return s.DeleteUser(uid) },
		},
		"grants": {
			func() error {
				u, err := s.CreateUser(User{Name: "gus", Role: RoleMember, Created: now})
				uid = u.ID
				if err != nil {
					return err
				}
				return s.SetGrant(Grant{Box: "shared", UserID: uid, Access: AccessViewer})
			},
			func() error { return s.SetGrant(Grant{Box: "shared", UserID: uid, Access: AccessMember}) },
			func() error { return s.RemoveGrant("shared", uid) },
		},
		"user_groups": {
			func() error {
				u, err := s.CreateUser(User{Name: "gil", Role: RoleMember, Created: now})
				uid = u.ID
				if err != nil {
					return err
				}
				return s.AddToGroup(uid, "eng", GroupByOwner)
			},
			func() error { return s.SetGroupsFrom(uid, "sso:corp", []string{"ops"}) },
			func() error { return s.RemoveFromGroup(uid, "eng", GroupByOwner) },
		},
		"group_grants": {
			func() error { return s.SetGroupGrant("shared", "eng", AccessViewer) },
			func() error { return s.SetGroupGrant("shared", "eng", AccessMember) },
			func() error { return s.RemoveGroupGrant("shared", "eng") },
		},
	}
	for _, table := range WatchedTables {
		ws := writes[table]
		if len(ws) == 0 {
			t.Errorf("no write of watched table %s in this test", table)
		}
		for i, w := range ws {
			before := seen()
			if err := w(); err != nil {
				t.Fatalf("%s write %d: %v", table, i, err)
			}
			if seen() == before {
				t.Errorf("%s write %d did not move Seen", table, i)
			}
		}
	}
	before := seen()
	if err := s.AddLeftover(Leftover{Kind: "box", Target: "web", Path: "/x"}); err != nil {
		t.Fatal(err)
	}
	if seen() != before {
		t.Error("a write to a table the stream does not show moved Seen")
	}
}

// Jobs and images started at once by one user are counted and recorded
// in one step: twenty at once with room for three leave three, and the
// others are told how many there were; another user's are not counted,
// and a name:tag the user has already is replaced whatever the count.
func TestAttackCountsRacedPastLimits(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Declare(func(tx *Tx) error {
		if err := tx.CreateBox(Box{Name: "mine", Owner: 1, Type: "small", Created: time.Now()}); err != nil {
			return err
		}
		return tx.CreateBox(Box{Name: "theirs", Owner: 2, Type: "small", Created: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddJobUnder(Job{ID: "other", Box: "theirs", State: "running", Started: time.Now()}, 2, 0); err != nil {
		t.Fatal(err)
	}
	race := func(f func(i int) (int, error)) (ok, over int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				n, err := f(i)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrOverLimit) && n == 3:
					over++
				default:
					t.Errorf("%d: %d %v", i, n, err)
				}
			})
		}
		wg.Wait()
		return ok, over
	}
	if ok, over := race(func(i int) (int, error) {
		return s.AddJobUnder(Job{ID: fmt.Sprint("j", i), Box: "mine", State: "running", Started: time.Now()}, 1, 3)
	}); ok != 3 || over != 17 {
		t.Errorf("jobs: %d recorded, %d refused", ok, over)
	}
	if ok, over := race(func(i int) (int, error) {
		return s.PutImageUnder(Image{Owner: 1, Name: fmt.Sprint("im", i), Tag: "latest", ID: "sha256:x"}, 3)
	}); ok != 3 || over != 17 {
		t.Errorf("images: %d recorded, %d refused", ok, over)
	}
	ims, _ := s.ListImages()
	if _, err := s.PutImageUnder(Image{Owner: 1, Name: ims[0].Name, Tag: "latest", ID: "sha256:y"}, 3); err != nil {
		t.Errorf("a rebuild at the bound: %v", err)
	}
}
