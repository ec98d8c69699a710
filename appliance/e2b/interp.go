package e2b

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/route"
)

// The code interpreter of @e2b/code-interpreter over Paddock's (package
// kernel): its runs and contexts, reached at the sandbox's address with
// the port header 49999. A run's answer is E2B's: JSON lines of its
// stdout, stderr, results (the last expression's and each display, in
// every form the kernel gave), error and count of runs: output and
// displays as the code prints them, once the kernel has the code (an
// error before, such as a context that is not there, is an HTTP error),
// the rest when it ends. A run whose caller goes away (the SDK's
// timeoutMs) is interrupted; its context keeps its state.

// JupyterPort is the port E2B's interpreter SDK names.
const JupyterPort = "49999"

// Interpreter is what E2B's interpreter needs of package kernel.
type Interpreter interface {
	RunCodeEach(ctx context.Context, name string, p api.RunPost, each func(api.RunEvent)) (api.RunResult, error)
	Contexts(ctx context.Context, name string) ([]api.CodeContext, error)
	CreateContext(ctx context.Context, name string, p api.ContextPost) (api.CodeContext, error)
	RestartContext(ctx context.Context, name, cname string) (api.CodeContext, error)
	RemoveContext(ctx context.Context, name, cname string) error
}

// languages are E2B's names of the interpreter's languages, as Paddock's.
var languages = map[string]string{"": "python", "python": "python", "js": "node", "javascript": "node", "bash": "bash"}

func language(l string) (string, error) {
	if v, ok := languages[strings.ToLower(l)]; ok {
		return v, nil
	}
	return "", unsupported("language %q is not supported by Paddock's interpreter: python, js (with a JavaScript kernel in the box's image) or bash (with bash_kernel)", l)
}

// codeContext is E2B's view of a context.
type codeContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func contextOf(c api.CodeContext) codeContext {
	l := c.Lang
	if l == "node" {
		l = "js"
	}
	return codeContext{ID: c.Name, Language: l, Cwd: homes[""]}
}

// kernelBox checks the caller's access to a request's sandbox, whose
// port must be the interpreter's.
func (e *E2B) kernelBox(r *http.Request, need string) (string, error) {
	if p := r.Header.Get("E2b-Sandbox-Port"); p != JupyterPort {
		return "", unsupported("port %s of a sandbox: Paddock's interpreter is at port %s here", p, JupyterPort)
	}
	id := sandboxOf(r)
	audit.From(r.Context()).About(id, "")
	return id, e.box(r.Context(), id, need)
}

type executeRequest struct {
	Code      string            `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// mimeKeys are E2B's names of a result's forms.
var mimeKeys = map[string]string{
	"text/plain": "text", "text/html": "html", "text/markdown": "markdown", "image/svg+xml": "svg", "image/png": "png",
	"image/jpeg": "jpeg", "application/pdf": "pdf", "text/latex": "latex", "application/json": "json", "application/javascript": "javascript",
}

func result(forms map[string]any, main bool) map[string]any {
	out := map[string]any{"type": "result", "is_main_result": main}
	for mime, v := range forms {
		k := mimeKeys[mime]
		if k == "" {
			k = mime
		}
		out[k] = v
	}
	return out
}

func (e *E2B) executeRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.kernelBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	var in executeRequest
	if err := readJSON(r.Body, &in); err != nil {
		return err
	}
	if len(in.EnvVars) > 0 {
		return unsupported("env_vars for one run are not supported by Paddock's interpreter: set them in the code (os.environ), or make the sandbox with envs")
	}
	p := api.RunPost{Code: in.Code, Context: in.ContextID, Timeout: "1h"}
	if in.ContextID == "" {
		if p.Lang, err = language(in.Language); err != nil {
			return err
		}
	}
	audit.From(r.Context()).Note("context", p.Context)
	enc := json.NewEncoder(w)
	lines := func(kind, text string) {
		for _, l := range strings.SplitAfter(text, "\n") {
			if l != "" {
				enc.Encode(map[string]any{"type": kind, "text": l})
			}
		}
	}
	streamed := false
	begin := func() {
		if !streamed {
			streamed = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
	}
	rc := http.NewResponseController(w)
	res, err := e.interp.RunCodeEach(r.Context(), box, p, func(ev api.RunEvent) {
		begin()
		lines("stdout", ev.Stdout)
		lines("stderr", ev.Stderr)
		if ev.Display != nil {
			enc.Encode(result(ev.Display, false))
		}
		rc.Flush()
	})
	if err != nil && !streamed {
		return err
	}
	if err != nil {
		// Past the status: the error is the run's, as E2B's lines say one.
		enc.Encode(map[string]any{"type": "error", "name": "PaddockError", "value": err.Error(), "traceback": ""})
		enc.Encode(map[string]any{"type": "end_of_execution"})
		return nil
	}
	if !streamed {
		begin()
		lines("stdout", res.Stdout)
		lines("stderr", res.Stderr)
		for _, d := range res.Display {
			enc.Encode(result(d, false))
		}
	}
	if res.Result != nil {
		enc.Encode(result(res.Result, true))
	}
	if res.Error != nil {
		enc.Encode(map[string]any{"type": "error", "name": res.Error.Name, "value": res.Error.Value, "traceback": strings.Join(res.Error.Traceback, "\n")})
	}
	enc.Encode(map[string]any{"type": "number_of_executions", "execution_count": res.ExecutionCount})
	enc.Encode(map[string]any{"type": "end_of_execution"})
	return nil
}

func (e *E2B) contextsRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.kernelBox(r, caller.AccessViewer)
	if err != nil {
		return err
	}
	cs, err := e.interp.Contexts(r.Context(), box)
	if err != nil {
		return err
	}
	out := []codeContext{}
	for _, c := range cs {
		out = append(out, contextOf(c))
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

func (e *E2B) createContextRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.kernelBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	var in struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if err := readJSON(r.Body, &in); err != nil {
		return err
	}
	if in.Cwd != "" && in.Cwd != homes[""] {
		return unsupported("a context's cwd is %s in Paddock's interpreter: change folder in the code (os.chdir)", homes[""])
	}
	lang, err := language(in.Language)
	if err != nil {
		return err
	}
	c, err := e.interp.CreateContext(r.Context(), box, api.ContextPost{Lang: lang})
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, contextOf(c))
}

func (e *E2B) restartContextRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.kernelBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	if _, err := e.interp.RestartContext(r.Context(), box, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (e *E2B) removeContextRoute(w http.ResponseWriter, r *http.Request) error {
	box, err := e.kernelBox(r, caller.AccessMember)
	if err != nil {
		return err
	}
	if err := e.interp.RemoveContext(r.Context(), box, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
