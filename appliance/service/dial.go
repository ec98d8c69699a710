package service

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
)

// DialBox opens a connection to port on a box's own loopback, carried by
// an exec of nc in the box: the way to a box on another server, whose box
// network this server has no route to (its agent serves the exec). The
// exec ends when the connection is closed, or when what listens in the
// box closes its end.
func (s *Service) DialBox(ctx context.Context, box string, port int) (net.Conn, error) {
	// The box image has nc (netcat-openbsd); smaller images may have
	// only busybox's.
	spec, err := s.CheckExec(box, api.ExecPost{Cmd: []string{"sh", "-c",
		`if command -v nc >/dev/null; then exec nc 127.0.0.1 "$0"; fi; exec busybox nc 127.0.0.1 "$0"`, strconv.Itoa(port)}})
	if err != nil {
		return nil, err
	}
	// Output comes back through a pipe that is a net.Conn (deadlines,
	// addresses); input goes in through one of its own, so that the
	// writing side can end alone (CloseWrite) and the box's side still
	// answer.
	here, there := net.Pipe()
	inR, inW := io.Pipe()
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer there.Close()
		defer inR.Close()
		defer cancel()
		s.Exec(ectx, box, spec, ExecIO{Stdin: inR, Stdout: there})
	}()
	return &boxConn{Conn: here, in: inW, cancel: cancel}, nil
}

// boxConn ends its exec when it is closed; CloseWrite ends its input only.
type boxConn struct {
	net.Conn
	in     *io.PipeWriter
	once   sync.Once
	cancel context.CancelFunc
}

func (c *boxConn) Write(b []byte) (int, error) { return c.in.Write(b) }

// CloseWrite says the input is over: what listens in the box gets its end
// of input and may still answer.
func (c *boxConn) CloseWrite() error { return c.in.Close() }

func (c *boxConn) Close() error {
	c.in.Close()
	err := c.Conn.Close()
	c.once.Do(c.cancel)
	return err
}
