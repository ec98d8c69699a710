package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
)

// A viewer of a shared box sees its desktop and cannot use it: their
// ticket is view-only, and the pointer event their VNC client sends does
// not move the box's mouse, where the owner's does (the real X server,
// read back with xdotool).
func TestViewOnlyDesktop(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	owner := d.Client()
	yes := true
	if _, err := owner.CreateBox(ctx, api.BoxPost{Name: "desk", Desktop: &yes}); err != nil {
		t.Fatal(err)
	}
	vicToken := memberToken(t, d, "vic")
	vic, err := client.New("http://"+d.Listen, vicToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Share(ctx, "desk", "vic", "viewer"); err != nil {
		t.Fatal(err)
	}
	mouse := func() string {
		var out bytes.Buffer
		code, err := owner.Exec(ctx, "desk", api.ExecPost{Cmd: []string{"sh", "-c", "DISPLAY=:1 xdotool getmouselocation"}}, client.ExecIO{Stdout: &out, Stderr: io.Discard})
		if err != nil || code != 0 {
			return ""
		}
		return strings.Join(strings.Fields(out.String())[:2], " ")
	}
	for deadline := time.Now().Add(90 * time.Second); mouse() == ""; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatal("the desktop's X server never answered")
		}
	}
	// point connects with a ticket, and moves the pointer to x, y.
	point := func(c *client.Client, x, y uint16) api.DesktopTicket {
		t.Helper()
		tk, err := c.DesktopTicket(ctx, "desk")
		if err != nil {
			t.Fatal(err)
		}
		ws, _, err := websocket.Dial(ctx, "ws://"+d.Listen+"/desktop/desk/ws?ticket="+tk.Ticket, &websocket.DialOptions{Subprotocols: []string{"binary"}})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		conn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
		read := func(n int) []byte {
			b := make([]byte, n)
			if _, err := io.ReadFull(conn, b); err != nil {
				t.Fatalf("reading %d bytes of the handshake: %v", n, err)
			}
			return b
		}
		read(12) // the server's version
		conn.Write([]byte("RFB 003.008\n"))
		types := read(int(read(1)[0]))
		if !bytes.Contains(types, []byte{1}) {
			t.Fatalf("the VNC server offers security types %v, not None", types)
		}
		conn.Write([]byte{1})
		if r := binary.BigEndian.Uint32(read(4)); r != 0 {
			t.Fatalf("security result %d", r)
		}
		conn.Write([]byte{1}) // shared
		read(20)              // width, height, pixel format
		read(int(binary.BigEndian.Uint32(read(4))))
		var ev [6]byte
		ev[0] = 5
		binary.BigEndian.PutUint16(ev[2:], x)
		binary.BigEndian.PutUint16(ev[4:], y)
		conn.Write(ev[:])
		// Then a request for a pixel: the server handles a client's
		// messages in order, so its answer (a FramebufferUpdate, type 0)
		// comes after it took in the pointer event, or its dropping.
		conn.Write([]byte{3, 0, 0, 0, 0, 0, 0, 1, 0, 1})
		if typ := read(1)[0]; typ != 0 {
			t.Fatalf("the VNC server answered an update request with message type %d", typ)
		}
		return tk
	}
	if tk := point(vic, 123, 77); !tk.ViewOnly || !strings.Contains(tk.Path, "view=1") {
		t.Fatalf("a viewer's ticket: %+v", tk)
	}
	if got := mouse(); got == "x:123 y:77" {
		t.Fatal("a viewer's pointer event moved the box's mouse")
	}
	if tk := point(owner, 123, 77); tk.ViewOnly {
		t.Fatalf("the owner's ticket is view-only: %+v", tk)
	}
	if got := mouse(); got != "x:123 y:77" {
		t.Fatalf("the owner's pointer event did not move the mouse (positive control): %s", got)
	}
}
