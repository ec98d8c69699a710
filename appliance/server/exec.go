package server

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/stream"
)

// exec runs an attached command over an upgraded connection.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) error {
	var p api.ExecPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), api.UpgradeExec) {
		return &api.Error{Code: api.CodeInvalid, Message: "attached exec needs 'Upgrade: " + api.UpgradeExec + "'; use /jobs to run detached"}
	}
	name := r.PathValue("name")
	rec := audit.From(r.Context())
	rec.Note("argv", p.Cmd)
	if p.TTY {
		rec.Note("tty", true)
	}
	// A sleeping box is woken after the upgrade, so that the caller hears
	// of it first (a notice); any other is checked before, so that a
	// refusal is a plain answer. The box is the one the route read.
	rb, err := s.readBox(r, name)
	if err != nil {
		return err
	}
	if !rb.ok {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no box named %q", name)}
	}
	b := rb.box
	sleeping := b.Asleep()
	var spec driver.ExecSpec
	if !sleeping {
		done := s.Svc.UseAwake(b)
		defer done()
		if spec, err = s.Svc.CheckExecIn(b, p); err != nil {
			return err
		}
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return err
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + api.UpgradeExec + "\r\n\r\n")
	if err := brw.Flush(); err != nil {
		return nil
	}
	rec.Open()
	fw := stream.NewWriter(conn)
	ctx := r.Context()
	if sleeping {
		fw.Frame(stream.Notice, []byte(fmt.Sprintf("starting box %s (its idle stop had stopped it)…", name)))
		done, _, err := s.Svc.Use(ctx, name)
		if err == nil {
			defer done()
			// Woken: read again.
			if b, err = s.Svc.RunningBox(name); err == nil {
				spec, err = s.Svc.CheckExecIn(b, p)
			}
		}
		if err != nil {
			rec.Result(err.Error())
			rec.Finish()
			fw.Frame(stream.Error, []byte(err.Error()))
			return nil
		}
	}
	stdinR, stdinW := io.Pipe()
	resize := make(chan [2]uint16, 4)
	go readClientFrames(brw.Reader, stdinW, resize)

	code, err := s.Svc.ExecIn(ctx, b, spec, service.ExecIO{
		Stdin: stdinR, Stdout: fw.Stream(stream.Stdout), Stderr: fw.Stream(stream.Stderr), Resize: resize,
	})
	stdinR.Close()
	// The end is in the log before the caller hears of it.
	if err != nil {
		rec.Result(err.Error())
		rec.Finish()
		fw.Frame(stream.Error, []byte(err.Error()))
		return nil
	}
	rec.Result(fmt.Sprintf("exit %d", code))
	rec.Finish()
	fw.Frame(stream.Exit, stream.ExitFrame(code))
	return nil
}

// readClientFrames feeds stdin and resizes from the client until it hangs up.
func readClientFrames(r *bufio.Reader, stdin *io.PipeWriter, resize chan<- [2]uint16) {
	defer close(resize)
	buf := make([]byte, 32<<10)
	stdinOpen := true
	for {
		t, p, err := stream.Read(r, buf)
		if err != nil {
			if stdinOpen {
				stdin.CloseWithError(io.ErrUnexpectedEOF)
			}
			return
		}
		switch t {
		case stream.Stdin:
			if stdinOpen {
				if _, err := stdin.Write(p); err != nil {
					stdinOpen = false
				}
			}
		case stream.StdinEOF:
			if stdinOpen {
				stdin.Close()
				stdinOpen = false
			}
		case stream.Resize:
			if rows, cols, err := stream.ParseResize(p); err == nil {
				select {
				case resize <- [2]uint16{rows, cols}:
				default:
				}
			}
		}
	}
}
