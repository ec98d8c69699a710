package server

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/events"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/testbed/forms"
)

// A sign-in link signs a browser in only through the confirmation page it
// opens, which names the account (and the one the browser is signed in as
// now): opening it, as any navigation can (a link on another user's
// preview page), changes no session; its form sent from elsewhere is
// refused and leaves the link good; sent from the page, it signs in.
func TestSignInLinkSwitchesNoSessionSilently(t *testing.T) {
	ts, srv, svc := wired(t)
	addOwner(t, svc)
	boss, _ := svc.Store.UserByName("boss")
	mia, err := svc.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	link := func(u store.User) string {
		tok, _, err := srv.access.SignInLink(caller.With(context.Background(), u), "/")
		if err != nil {
			t.Fatal(err)
		}
		return "/signin/" + tok
	}
	who := func(b *http.Client) string {
		t.Helper()
		_, body := forms.Get(t, b, ts.URL+"/v1/whoami")
		for _, n := range []string{"boss", "mia"} {
			if strings.Contains(body, `"user":"`+n+`"`) {
				return n
			}
		}
		return "nobody"
	}
	b := forms.Browser()
	own := link(boss)
	if code, page := forms.Get(t, b, ts.URL+own); code != 200 || !strings.Contains(page, "as <b>boss</b>") || strings.Contains(page, `id="switch"`) {
		t.Fatalf("the owner's link's page: %d %s", code, page)
	}
	if w := who(b); w != "nobody" {
		t.Fatalf("opening a link signed the browser in as %s", w)
	}
	forms.Post(t, b, ts.URL, own, url.Values{})
	if w := who(b); w != "boss" {
		t.Fatalf("the owner's link's form: signed in as %s", w)
	}

	// The member's link, in the owner's browser.
	theirs := link(mia)
	code, page := forms.Get(t, b, ts.URL+theirs)
	if code != 200 || !strings.Contains(page, "as <b>mia</b>") || !strings.Contains(page, "signed in as <b>boss</b>") {
		t.Fatalf("another user's link's page: %d %s", code, page)
	}
	if w := who(b); w != "boss" {
		t.Fatalf("opening another user's link switched the session to %s", w)
	}
	req, _ := http.NewRequest("POST", ts.URL+theirs, nil)
	req.Header.Set("Origin", "http://web.pd.test") // a preview page's
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || who(b) != "boss" {
		t.Fatalf("the link's form sent from a preview page: %d, signed in as %s", resp.StatusCode, who(b))
	}
	// The positive control: from the page itself, with the owner's say.
	forms.Post(t, b, ts.URL, theirs, url.Values{})
	if w := who(b); w != "mia" {
		t.Fatalf("the link's form from its page: signed in as %s", w)
	}
	if code, _ := forms.Get(t, forms.Browser(), ts.URL+theirs); code != http.StatusGone {
		t.Fatalf("a used link's page: %d", code)
	}
}

// The events stream is bounded: a user past MaxWatchesPerUser open streams
// gets 429 and a message that says so; another user still gets one; a
// closed stream frees its place.
func TestEventsStreamsAreBoundedPerUser(t *testing.T) {
	ts, _, svc := wired(t)
	owner := addOwner(t, svc)
	mia, _ := svc.Store.CreateUser(store.User{Name: "mia", Role: store.RoleMember, Created: time.Now()})
	other, hash := auth.NewToken()
	svc.Store.AddToken(store.Token{Hash: hash, Name: "m", UserID: mia.ID, Created: time.Now()})
	open := func(tok string) (*http.Response, context.CancelFunc) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, cancel
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range events.MaxWatchesPerUser {
		resp, cancel := open(owner)
		cancels = append(cancels, cancel)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
	}
	resp, cancel := open(owner)
	var body []byte
	if resp.StatusCode != 200 {
		body, _ = io.ReadAll(resp.Body)
	}
	cancel()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "events streams open") {
		t.Fatalf("one stream past the user's bound: %d %s", resp.StatusCode, body)
	}
	if resp, cancel := open(other); resp.StatusCode != 200 {
		t.Fatalf("another user's stream: %d", resp.StatusCode)
	} else {
		cancel()
	}
	cancels[0]()
	for i := 0; ; i++ {
		resp, cancel := open(owner)
		cancel()
		if resp.StatusCode == 200 {
			break
		}
		if i == 100 {
			t.Fatalf("a closed stream's place was not freed: %d", resp.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
