// Package sshgate is paddockd's SSH gateway: 'ssh -p 2222 BOX@HOST' opens a
// shell in the box as the box user, with a terminal, window resizing, a
// single command with its exit status, and the sftp subsystem (so sftp and
// scp work). Clients authenticate with the public keys registered with
// 'paddock key add'; the gateway's own host key is made once and kept in
// the state directory.
//
// Until Paddock has users, every registered key reaches every box (the
// owner's keys); boxes will be limited to their owner's keys when users
// arrive.
package sshgate

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/store"
)

// SFTPServer is where the box image keeps OpenSSH's sftp server.
const SFTPServer = "/usr/lib/openssh/sftp-server"

// Gateway serves SSH for boxes.
type Gateway struct {
	Svc   *service.Service
	Store *store.Store
	Log   *slog.Logger

	cfg *ssh.ServerConfig
	ln  net.Listener
	wg  sync.WaitGroup
}

// HostKey loads the host key at path, making it on first use.
func HostKey(path string) (ssh.Signer, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		blk, err := ssh.MarshalPrivateKey(priv, "paddockd host key")
		if err != nil {
			return nil, err
		}
		b = pem.EncodeToMemory(blk)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(b)
}

// Listen starts the gateway on addr with the given host key.
func (g *Gateway) Listen(addr string, hostKey ssh.Signer) error {
	g.cfg = &ssh.ServerConfig{
		PublicKeyCallback: func(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			name, user, err := g.allowed(meta.User(), ssh.FingerprintSHA256(key))
			if err != nil {
				return nil, fmt.Errorf("key not allowed for %s", meta.User())
			}
			return &ssh.Permissions{Extensions: map[string]string{"key": name, "user": user}}, nil
		},
		ServerVersion: "SSH-2.0-paddockd",
	}
	g.cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ssh gateway: %w", err)
	}
	g.ln = ln
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go g.serveConn(c)
		}
	}()
	return nil
}

// allowed checks that a user who may reach the box (its owner, or an owner
// of the server) registered the key, and returns that registration's name
// and its user's.
// Several users may register one public key; each reaches their own boxes
// with it. The answer is the same for a box that does not exist, so names
// do not leak.
func (g *Gateway) allowed(box, fingerprint string) (string, string, error) {
	holders, err := g.Store.SSHKeyHolders(fingerprint)
	if err != nil {
		return "", "", err
	}
	b, err := g.Store.GetBox(box)
	if err != nil {
		return "", "", err
	}
	for _, k := range holders {
		u := store.User{ID: k.Owner, Role: store.RoleOwner} // keys from before there were users
		if k.Owner != 0 {
			if u, err = g.Store.GetUser(k.Owner); err != nil {
				continue // a removed user's key
			}
		}
		// Its owner's, or a member's of it (a viewer reads, and a shell
		// is work).
		if a, err := caller.AccessFor(g.Store, u, b); err == nil && caller.AccessRank(a) >= caller.AccessRank(caller.AccessMember) {
			return k.Name, u.Name, nil
		}
	}
	return "", "", errors.New("no user who may reach this box registered the key")
}

// Addr is where the gateway listens.
func (g *Gateway) Addr() net.Addr { return g.ln.Addr() }

// Close stops accepting connections.
func (g *Gateway) Close() error {
	err := g.ln.Close()
	g.wg.Wait()
	return err
}

func (g *Gateway) serveConn(c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, g.cfg)
	if err != nil {
		c.Close()
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	// Forwards end with the connection that carries them.
	conns, endForwards := context.WithCancel(context.Background())
	defer endForwards()
	box := sc.User()
	key := sc.Permissions.Extensions["key"]
	g.Log.Info("ssh session", "box", box, "key", key, "from", sc.RemoteAddr().String())
	// The connection is the session the audit log records, opened and
	// closed; what runs in it is the box's.
	rec := audit.NewRecord("ssh", g.Svc.Record)
	rec.Who(sc.Permissions.Extensions["user"], "ssh key "+key)
	rec.Where(hostOf(sc.RemoteAddr()), string(sc.ClientVersion()))
	rec.About(box, "")
	rec.Open()
	defer rec.Finish()
	// The connection is a use of the box while it lasts: a box its idle
	// stop put to sleep is started first (its first session is told).
	used, woke, err := g.Svc.Use(context.Background(), box)
	if err != nil {
		g.Log.Warn("ssh: waking the box", "box", box, "err", err)
	} else {
		defer used()
	}
	var told atomic.Bool
	told.Store(!woke)
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			ch, chReqs, err := nc.Accept()
			if err != nil {
				continue
			}
			if !told.Swap(true) {
				fmt.Fprintf(ch.Stderr(), "paddock: started box %s (its idle stop had stopped it)\r\n", box)
			}
			go g.session(box, ch, chReqs)
		case "direct-tcpip":
			go g.forward(conns, box, nc)
		default:
			nc.Reject(ssh.UnknownChannelType, "only sessions and forwards to ports inside the box (ssh -L, ssh -W)")
		}
	}
}

// forward carries a local forward (ssh -L, ssh -W, ProxyJump) to a port
// inside the box: the host asked for must be the box itself (localhost,
// 127.0.0.1, ::1 or the box's name), never an address beyond it. The
// connection is made from inside the box, to its loopback, so a server
// that listens there only (an IDE's) is reached too. Remote forwards and
// agent forwarding are refused (their requests are answered no).
func (g *Gateway) forward(ctx context.Context, box string, nc ssh.NewChannel) {
	var p struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		nc.Reject(ssh.ConnectionFailed, "a malformed forward request")
		return
	}
	switch strings.ToLower(strings.Trim(p.Host, "[]")) {
	case "localhost", "127.0.0.1", "::1", strings.ToLower(box):
	default:
		nc.Reject(ssh.Prohibited, fmt.Sprintf("forwards reach ports inside box %s only: ask for localhost:PORT, not %s", box, p.Host))
		return
	}
	if p.Port == 0 || p.Port > 65535 {
		nc.Reject(ssh.ConnectionFailed, fmt.Sprintf("port %d: give 1 to 65535", p.Port))
		return
	}
	conn, err := g.Svc.DialBox(context.Background(), box, int(p.Port))
	if err != nil {
		nc.Reject(ssh.ConnectionFailed, err.Error())
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		conn.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	g.Log.Info("ssh forward", "box", box, "port", p.Port)
	// The client's end of input is not the end: the box's side answers
	// until it closes (or the SSH connection ends).
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	go func() {
		io.Copy(conn, ch)
		if cw, ok := conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	io.Copy(ch, conn)
	conn.Close()
	ch.CloseWrite()
	ch.Close()
}

type ptyReq struct {
	Term          string
	Cols, Rows    uint32
	Width, Height uint32
	Modes         string
}

// session runs one shell, command or subsystem and reports its exit status.
func (g *Gateway) session(box string, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var tty bool
	var rows, cols uint16
	env := map[string]string{}
	resize := make(chan [2]uint16, 4)
	for req := range reqs {
		var cmd []string
		switch req.Type {
		case "pty-req":
			var p ptyReq
			if ssh.Unmarshal(req.Payload, &p) == nil {
				tty, rows, cols = true, uint16(p.Rows), uint16(p.Cols)
				if p.Term != "" {
					env["TERM"] = p.Term
				}
			}
			req.Reply(true, nil)
			continue
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && (kv.Name == "LANG" || strings.HasPrefix(kv.Name, "LC_")) {
				env[kv.Name] = kv.Value
			}
			req.Reply(true, nil)
			continue
		case "shell":
			cmd = []string{"bash", "-l"}
		case "exec":
			var p struct{ Command string }
			if ssh.Unmarshal(req.Payload, &p) != nil {
				req.Reply(false, nil)
				continue
			}
			cmd = []string{"bash", "-lc", p.Command}
		case "subsystem":
			var p struct{ Name string }
			if ssh.Unmarshal(req.Payload, &p) != nil || p.Name != "sftp" {
				req.Reply(false, nil)
				continue
			}
			cmd = []string{SFTPServer}
		default:
			req.Reply(false, nil)
			continue
		}
		spec, err := g.Svc.CheckExec(box, api.ExecPost{Cmd: cmd, Env: env, TTY: tty, Rows: rows, Cols: cols})
		if err != nil {
			// Accept, so that the client reads why, then fail.
			req.Reply(true, nil)
			fmt.Fprintf(ch.Stderr(), "paddock: %v\r\n", err)
			sendStatus(ch, 255)
			return
		}
		req.Reply(true, nil)
		go func() {
			for r := range reqs {
				if r.Type == "window-change" && len(r.Payload) >= 8 {
					c, rw := binary.BigEndian.Uint32(r.Payload), binary.BigEndian.Uint32(r.Payload[4:])
					select {
					case resize <- [2]uint16{uint16(rw), uint16(c)}:
					default:
					}
				}
				if r.WantReply {
					r.Reply(r.Type == "window-change", nil)
				}
			}
		}()
		code, err := g.Svc.Exec(context.Background(), box, spec, service.ExecIO{
			Stdin: ch, Stdout: ch, Stderr: ch.Stderr(), Resize: resize,
		})
		if err != nil {
			fmt.Fprintf(ch.Stderr(), "paddock: %v\r\n", err)
			code = 255
		}
		ch.CloseWrite()
		sendStatus(ch, code)
		return
	}
}

func sendStatus(ch ssh.Channel, code int) {
	b := make([]byte, 4)
	binary.BigEndian.PutUint32(b, uint32(code))
	ch.SendRequest("exit-status", false, b)
}

// hostOf is the address of a connection's far end, without its port.
func hostOf(a net.Addr) string {
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}
