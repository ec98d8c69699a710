package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/service"
)

// signInLink hands out a single-use link that signs a browser in as the
// caller (paddock dashboard).
func (s *Server) signInLink(w http.ResponseWriter, r *http.Request) error {
	var p api.SignInPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	next := "/"
	if p.Box != "" {
		if err := s.seesBox(r, p.Box); err != nil {
			return err
		}
		next = "/boxes/" + url.PathEscape(p.Box)
	}
	if p.Port != 0 {
		switch {
		case p.Box == "":
			return &api.Error{Code: api.CodeInvalid, Field: "port", Message: "a preview is of a box's port: give the box too"}
		case p.Port < 1 || p.Port > 65535:
			return &api.Error{Code: api.CodeInvalid, Field: "port", Message: fmt.Sprintf("port %d: give 1 to 65535", p.Port)}
		case s.Preview == nil:
			return &api.Error{Code: api.CodeConflict, Message: "this server serves no previews: it has no host name, and no loopback address to serve PORT-BOX.localhost on"}
		}
		next = s.Preview.StartPath(p.Box, p.Port)
	}
	tok, exp, err := s.access.SignInLink(r.Context(), next)
	if err != nil {
		return err
	}
	base := s.URL
	if base == "" {
		base = "http://" + r.Host
	}
	return route.WriteJSON(w, http.StatusCreated, api.SignInLink{URL: base + "/signin/" + tok, Expires: exp})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}

// terminal is a login shell in a box over a websocket, for the browser:
// binary messages carry the terminal's bytes both ways; a text message
// from the browser is a size, {"rows":R,"cols":C}; the last text message
// from the server is {"exit":CODE} or {"error":MESSAGE}. The websocket
// is refused from another origin (a page elsewhere cannot use the
// browser's session cookie to open it).
func (s *Server) terminal(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	rows, _ := strconv.ParseUint(r.URL.Query().Get("rows"), 10, 16)
	cols, _ := strconv.ParseUint(r.URL.Query().Get("cols"), 10, 16)
	// A terminal is a use of the box while it is open (a sleeping box
	// wakes first).
	used, _, err := s.Svc.Use(r.Context(), name)
	if err != nil {
		return err
	}
	defer used()
	spec, err := s.Svc.CheckExec(name, api.ExecPost{Cmd: []string{"bash", "-l"}, TTY: true, Rows: uint16(rows), Cols: uint16(cols),
		Env: map[string]string{"TERM": "xterm-256color"}})
	if err != nil {
		return err
	}
	c, err := websocket.Accept(w, r, nil) // nil options: the Origin must be this host
	if err != nil {
		return nil // Accept has answered
	}
	defer c.CloseNow()
	audit.From(r.Context()).Open()
	c.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stdinR, stdinW := io.Pipe()
	resize := make(chan [2]uint16, 4)
	go func() {
		defer close(resize)
		defer stdinW.Close()
		for {
			t, p, err := c.Read(ctx)
			if err != nil {
				cancel()
				return
			}
			if t == websocket.MessageBinary {
				if _, err := stdinW.Write(p); err != nil {
					return
				}
				continue
			}
			var sz struct{ Rows, Cols uint16 }
			if json.Unmarshal(p, &sz) == nil && sz.Rows > 0 && sz.Cols > 0 {
				select {
				case resize <- [2]uint16{sz.Rows, sz.Cols}:
				default:
				}
			}
		}
	}()
	out := &wsWriter{ctx: ctx, c: c}
	code, err := s.Svc.Exec(ctx, name, spec, service.ExecIO{Stdin: stdinR, Stdout: out, Stderr: out, Resize: resize})
	stdinR.Close()
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		c.Write(ctx, websocket.MessageText, mustJSON(map[string]string{"error": err.Error()}))
	} else {
		c.Write(ctx, websocket.MessageText, mustJSON(map[string]int{"exit": code}))
	}
	c.Close(websocket.StatusNormalClosure, "")
	return nil
}

type wsWriter struct {
	ctx context.Context
	c   *websocket.Conn
}

func (w *wsWriter) Write(p []byte) (int, error) {
	if err := w.c.Write(w.ctx, websocket.MessageBinary, p); err != nil {
		return 0, err
	}
	return len(p), nil
}
