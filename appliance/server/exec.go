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

func (s *Server) startJob(w http.ResponseWriter, r *http.Request) error {
	var p api.ExecPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Note("argv", p.Cmd)
	j, err := s.Svc.StartJob(r.PathValue("name"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, j)
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	js, err := s.Svc.Jobs(r.PathValue("name"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, js)
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) error {
	j, err := s.Svc.Job(r.PathValue("name"), r.PathValue("id"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, j)
}

func (s *Server) signalJob(w http.ResponseWriter, r *http.Request) error {
	var p api.SignalPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Note("signal", p.Signal)
	j, err := s.Svc.SignalJob(r.Context(), r.PathValue("name"), r.PathValue("id"), p.Signal)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, j)
}

func (s *Server) jobInput(w http.ResponseWriter, r *http.Request) error {
	eof := r.URL.Query().Get("eof")
	if eof != "" && eof != "0" && eof != "1" {
		return &api.Error{Code: api.CodeInvalid, Field: "eof", Message: fmt.Sprintf("eof=%q: give 1 (end the job's input after this send) or 0", eof)}
	}
	in, err := s.Svc.JobInput(r.Context(), r.PathValue("name"), r.PathValue("id"), r.Body, eof == "1")
	audit.From(r.Context()).Note("bytes", in.Bytes)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, in)
}

func (s *Server) jobLog(w http.ResponseWriter, r *http.Request) error {
	name, id := r.PathValue("name"), r.PathValue("id")
	if _, err := s.Svc.Job(name, id); err != nil {
		return err
	}
	follow := r.URL.Query().Get("follow") == "1"
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	return s.Svc.JobLog(r.Context(), name, id, follow, w, func() { rc.Flush() })
}

func (s *Server) push(w http.ResponseWriter, r *http.Request) error {
	rec := audit.From(r.Context())
	rec.Note("path", r.URL.Query().Get("path"))
	body := &route.Counted{R: r.Body}
	defer func() { rec.Note("bytes", body.N) }()
	if err := s.Svc.Push(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"), body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pull(w http.ResponseWriter, r *http.Request) error {
	audit.From(r.Context()).Note("path", r.URL.Query().Get("path"))
	rc, err := s.Svc.Pull(r.Context(), r.PathValue("name"), r.URL.Query().Get("path"))
	return s.sendTar(w, r, rc, err, "pull", r.PathValue("name"))
}

func (s *Server) backupDrive(w http.ResponseWriter, r *http.Request) error {
	rc, err := s.Svc.BackupDrive(r.Context(), r.PathValue("name"))
	return s.sendTar(w, r, rc, err, "drive backup", r.PathValue("name"))
}

func (s *Server) restoreDrive(w http.ResponseWriter, r *http.Request) error {
	if err := s.Svc.RestoreDrive(r.Context(), r.PathValue("name"), r.Body); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sendTar streams a tar the service opened. Once the status is sent, an
// error can only cut the stream short: the connection is broken off
// (http.ErrAbortHandler), so that the client reads an error. Ended
// cleanly, a tar cut between two entries would read as a whole one with
// files missing.
func (s *Server) sendTar(w http.ResponseWriter, r *http.Request, rc io.ReadCloser, err error, what, name string) error {
	if err != nil {
		return err
	}
	defer rc.Close()
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	n, err := io.Copy(w, rc)
	rec := audit.From(r.Context())
	rec.Note("bytes", n)
	if err != nil {
		rec.Result("cut short: " + err.Error())
		s.Log.Warn(what+" interrupted", "name", name, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
