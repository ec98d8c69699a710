package sshgate

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/paddock-dev/paddock/appliance/store"
)

// A key reaches the boxes of its user (any box for an owner), and a box of
// someone else is refused like a box that does not exist.
func TestKeysReachTheirUsersBoxes(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	owner, _ := st.CreateUser(store.User{Name: "olga", Role: store.RoleOwner, Created: time.Now()})
	mia, _ := st.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	ole, _ := st.CreateUser(store.User{Name: "ole", Role: store.RoleMember, Created: time.Now()})
	fp := map[string]string{}
	for _, u := range []store.User{owner, mia, ole} {
		pub, _, _ := ed25519.GenerateKey(rand.Reader)
		k, _ := ssh.NewPublicKey(pub)
		fp[u.Name] = ssh.FingerprintSHA256(k)
		if err := st.AddSSHKey(store.SSHKey{Fingerprint: fp[u.Name], Name: u.Name + "-key", Key: string(ssh.MarshalAuthorizedKey(k)), Created: time.Now(), Owner: u.ID}); err != nil {
			t.Fatal(err)
		}
	}
	err = st.Declare(func(tx *store.Tx) error {
		return tx.CreateBox(store.Box{Name: "miasbox", Type: "small", Image: "i", Desired: "running", Created: time.Now(), Owner: mia.ID})
	})
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{Store: st}
	for _, c := range []struct {
		user, box string
		ok        bool
	}{
		{"mia", "miasbox", true},
		{"olga", "miasbox", true},
		{"ole", "miasbox", false},
		{"mia", "nosuch", false},
	} {
		name, user, err := g.allowed(c.box, fp[c.user])
		if (err == nil) != c.ok || (c.ok && (name != c.user+"-key" || user != c.user)) {
			t.Errorf("%s's key to %s: %q of %q, %v, want allowed=%v", c.user, c.box, name, user, err, c.ok)
		}
	}
	if _, _, err := g.allowed("miasbox", "SHA256:unknown"); err == nil {
		t.Error("an unknown key is allowed")
	}
	// A member who registers the owner's public key takes nothing from the
	// owner: each reaches their own boxes with it, the member no others.
	olgaKey, _ := st.SSHKeys(owner.ID)
	if err := st.AddSSHKey(store.SSHKey{Fingerprint: fp["olga"], Name: "stolen", Key: olgaKey[0].Key, Created: time.Now(), Owner: ole.ID}); err != nil {
		t.Fatalf("a second user registers the same key: %v", err)
	}
	if err := st.AddSSHKey(store.SSHKey{Fingerprint: "SHA256:another", Name: "olga-key", Key: "k", Created: time.Now(), Owner: ole.ID}); err != nil {
		t.Fatalf("a key name another user has: %v", err)
	}
	st.Declare(func(tx *store.Tx) error {
		return tx.CreateBox(store.Box{Name: "olesbox", Type: "small", Image: "i", Desired: "running", Created: time.Now(), Owner: ole.ID})
	})
	if name, _, err := g.allowed("miasbox", fp["olga"]); err != nil || name != "olga-key" {
		t.Errorf("the owner's key after a member registered it: %q %v", name, err)
	}
	if name, _, err := g.allowed("olesbox", fp["olga"]); err != nil || name != "olga-key" {
		t.Errorf("the owner's key to a member's box: %q %v", name, err)
	}
	// A removed user's keys stop working.
	st.DeleteUser(mia.ID)
	if _, _, err := g.allowed("miasbox", fp["mia"]); err == nil {
		t.Error("a removed user's key is allowed")
	}
}
