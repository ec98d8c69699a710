package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/route"
)

// DefaultTimeout is a sandbox's time to live when its create gives none
// (E2B's SDKs' documented default).
const DefaultTimeout = 300

// MaxTimeout bounds the time to live a sandbox may be given (E2B's
// longest, a day).
const MaxTimeout = 24 * 60 * 60

// sandbox is E2B's view of a box: a create's answer and a list's item
// both (the SDKs read the fields each needs).
type sandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	Alias           string `json:"alias,omitempty"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is the key again: E2B's interpreter SDK sends it
	// (not the access token) with its calls of contexts.
	TrafficAccessToken string            `json:"trafficAccessToken,omitempty"`
	Domain             *string           `json:"domain"`
	StartedAt          time.Time         `json:"startedAt"`
	EndAt              time.Time         `json:"endAt"`
	CPUCount           int               `json:"cpuCount"`
	MemoryMB           int64             `json:"memoryMB"`
	DiskSizeMB         int64             `json:"diskSizeMB"`
	Metadata           map[string]string `json:"metadata"`
	State              string            `json:"state"`
	VolumeMounts       []any             `json:"volumeMounts"`
}

// Templates names what E2B's templates are in Paddock: each a box of
// the server's default type without Paddock's own desktop (E2B's
// desktop SDK starts its own X server and XFCE on display :0, from the
// box image's Xvfb, as in E2B's desktop template). Any other template is
// a Paddock box type, or else an image.
var Templates = map[string]bool{"base": false, "code-interpreter-v1": false, "desktop": false}

func (e *E2B) view(b api.Box, token string) sandbox {
	template := b.Labels["e2b-template"]
	if template == "" {
		template = b.Type
	}
	state := "running"
	if b.Desired != "running" {
		state = "paused"
	}
	end := b.Created
	if b.ExpiresAt != nil {
		end = *b.ExpiresAt
	} else if b.Desired == "running" {
		end = e.core.Time().Add(MaxTimeout * time.Second)
	}
	meta := map[string]string{}
	for k, v := range b.Labels {
		if k != "e2b-template" {
			meta[k] = v
		}
	}
	var domain *string
	if e.Domain != "" {
		domain = &e.Domain
	}
	return sandbox{TemplateID: template, SandboxID: b.Name, ClientID: "paddock", EnvdVersion: EnvdVersion, EnvdAccessToken: token, TrafficAccessToken: token, Domain: domain,
		StartedAt: b.Created, EndAt: end, CPUCount: max(1, int(b.CPUs+0.5)), MemoryMB: b.MemoryMiB, Metadata: meta, State: state,
		VolumeMounts: []any{}}
}

// key is the key a request was made with: a create's and a connect's
// answer give it back as the sandbox's access token.
func key(r *http.Request) string {
	for _, h := range []string{"X-API-KEY", "X-Access-Token"} {
		if v := r.Header.Get(h); v != "" {
			return v
		}
	}
	t, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return t
}

// box checks the caller's access to sandbox id against need: a sandbox
// the caller may not see is not found, as on /v1.
func (e *E2B) box(ctx context.Context, id, need string) error {
	if id == "" {
		return &api.Error{Code: api.CodeInvalid, Message: "no sandbox: give its id (the E2b-Sandbox-Id header)"}
	}
	a, err := e.core.AccessOf(ctx, id)
	if err != nil {
		return err
	}
	if a == caller.AccessNone {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("sandbox %s not found", id)}
	}
	if caller.AccessRank(a) < caller.AccessRank(need) {
		if need == caller.AccessAll {
			return &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("sandbox %s is shared with you as a %s: only its owner may remove it", id, a)}
		}
		return &api.Error{Code: api.CodeForbidden, Message: fmt.Sprintf("sandbox %s is shared with you as a viewer: a viewer reads it and changes nothing", id)}
	}
	return nil
}

type createBody struct {
	TemplateID          string            `json:"templateID"`
	Timeout             *int              `json:"timeout"`
	AutoPause           *bool             `json:"autoPause"`
	AutoPauseMemory     *bool             `json:"autoPauseMemory"`
	AutoResume          json.RawMessage   `json:"autoResume"`
	Secure              *bool             `json:"secure"`
	AllowInternetAccess *bool             `json:"allow_internet_access"`
	Network             json.RawMessage   `json:"network"`
	Metadata            map[string]string `json:"metadata"`
	EnvVars             map[string]string `json:"envVars"`
	MCP                 json.RawMessage   `json:"mcp"`
	IAM                 json.RawMessage   `json:"iam"`
	VolumeMounts        json.RawMessage   `json:"volumeMounts"`
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

func (e *E2B) createRoute(w http.ResponseWriter, r *http.Request) error {
	var b createBody
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	// A snapshot's id is a template: the sandbox is a fork of it.
	if box, err := e.findSnapshot(r.Context(), b.TemplateID); err != nil {
		return err
	} else if box != "" {
		return e.createFromSnapshot(w, r, box, b)
	}
	p, err := e.boxPost(b)
	if err != nil {
		return err
	}
	audit.From(r.Context()).Note("template", b.TemplateID)
	box, err := e.core.CreateBox(r.Context(), p)
	if err != nil {
		return err
	}
	audit.From(r.Context()).About(box.Name, "")
	e.ready(r.Context(), box.Name)
	return route.WriteJSON(w, http.StatusCreated, e.view(box, key(r)))
}

// boxPost is the box a create asks for; what Paddock does not do is
// refused by name.
func (e *E2B) boxPost(b createBody) (api.BoxPost, error) {
	switch {
	case present(b.MCP):
		return api.BoxPost{}, api.Invalid("mcp", "MCP gateways in sandboxes are not supported by Paddock: give the box's agents an MCP server of their own")
	case present(b.IAM):
		return api.BoxPost{}, api.Invalid("iam", "iam tokens are not supported by Paddock: its credential broker ('paddock secret broker') keeps secrets out of boxes")
	case present(b.VolumeMounts):
		return api.BoxPost{}, api.Invalid("volumeMounts", "volumes are not supported through E2B's API: mount a Paddock drive ('paddock new --mount')")
	case present(b.Network):
		return api.BoxPost{}, api.Invalid("network", "network rules are not supported through E2B's API: give the sandbox a Paddock egress policy, or allowInternetAccess: false")
	case b.AutoPauseMemory != nil && *b.AutoPauseMemory:
		return api.BoxPost{}, api.Invalid("autoPauseMemory", "a pause that keeps memory is not supported by Paddock yet: a pause keeps the sandbox's files, not its processes")
	case present(b.AutoResume) && string(b.AutoResume) != `{"enabled":false}`:
		return api.BoxPost{}, api.Invalid("autoResume", "auto resume is not supported by Paddock: resume a paused sandbox with Sandbox.connect")
	}
	template := b.TemplateID
	if template == "" {
		template = "base"
	}
	if err := api.ValidNodeLabel("e2b-template", template); err != nil {
		return api.BoxPost{}, api.Invalid("templateID", "template %q: a template is a name (of E2B's: base, code-interpreter-v1, desktop; or a Paddock box type or image)", template)
	}
	timeout := DefaultTimeout
	if b.Timeout != nil {
		timeout = *b.Timeout
	}
	if timeout <= 0 || timeout > MaxTimeout {
		return api.BoxPost{}, api.Invalid("timeout", "timeout %d s: give 1 to %d seconds", timeout, MaxTimeout)
	}
	labels := map[string]string{"e2b-template": template}
	for k, v := range b.Metadata {
		if k == "e2b-template" {
			return api.BoxPost{}, api.Invalid("metadata", "metadata key %q is Paddock's own", k)
		}
		if err := api.ValidNodeLabel(k, v); err != nil {
			return api.BoxPost{}, api.Invalid("metadata", "metadata %s=%s: Paddock keeps metadata as a box's labels: give lower-case keys of letters, digits and '-', and values of at most 63 characters without spaces, '=' or ','", k, v)
		}
		labels[k] = v
	}
	p := api.BoxPost{TTL: strconv.Itoa(timeout) + "s", Env: b.EnvVars, Labels: labels}
	if desktop, ok := Templates[template]; ok {
		p.Desktop = &desktop
	} else if strings.ContainsAny(template, ":/") {
		p.Image = template
	} else {
		p.Type = template
	}
	if b.AllowInternetAccess != nil && !*b.AllowInternetAccess {
		p.Policy = "deny-all"
	}
	return p, nil
}

func (e *E2B) listRoute(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	want := map[string]bool{"running": true, "paused": true}
	if s := q.Get("state"); s != "" {
		want = map[string]bool{}
		for _, st := range strings.Split(s, ",") {
			if st != "running" && st != "paused" {
				return api.Invalid("state", "state %q: give running or paused", st)
			}
			want[st] = true
		}
	}
	meta, err := metadataQuery(q.Get("metadata"))
	if err != nil {
		return err
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > 100 {
			return api.Invalid("limit", "limit %q: give 1 to 100", l)
		}
	}
	bs, err := e.core.ListBoxes(r.Context())
	if err != nil {
		return err
	}
	out := []sandbox{}
	for _, b := range bs {
		sb := e.view(b, "")
		if !want[sb.State] || !api.HasLabels(b.Labels, meta) {
			continue
		}
		if t := q.Get("template"); t != "" && t != sb.TemplateID {
			continue
		}
		if a := q.Get("startedAfter"); a != "" {
			after, err := time.Parse(time.RFC3339, a)
			if err != nil {
				return api.Invalid("startedAfter", "startedAfter %q: give a time as RFC 3339", a)
			}
			if !b.Created.After(after) {
				continue
			}
		}
		out = append(out, sb)
	}
	// Newest first, then by id: a page's token is the id it ends at.
	desc := q.Get("order") != "asc"
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt) == desc
		}
		return out[i].SandboxID < out[j].SandboxID
	})
	if next := q.Get("nextToken"); next != "" {
		i := slices.IndexFunc(out, func(s sandbox) bool { return s.SandboxID == next })
		if i < 0 {
			return api.Invalid("nextToken", "nextToken %q is no sandbox of this list (it changed since): list again", next)
		}
		out = out[i:]
	}
	if len(out) > limit {
		w.Header().Set("X-Next-Token", out[limit].SandboxID)
		out = out[:limit]
	}
	return route.WriteJSON(w, http.StatusOK, out)
}

// metadataQuery reads a list's metadata filter: key=value pairs,
// URL-encoded twice by the SDKs.
func metadataQuery(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, "&") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, api.Invalid("metadata", "metadata filter %q: give key=value pairs", s)
		}
		var err1, err2 error
		k, err1 = unescape(k)
		v, err2 = unescape(v)
		if err1 != nil || err2 != nil {
			return nil, api.Invalid("metadata", "metadata filter %q is not URL-encoded", s)
		}
		out[k] = v
	}
	return out, nil
}

func (e *E2B) getRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	if err := e.box(r.Context(), id, caller.AccessViewer); err != nil {
		return err
	}
	b, err := e.core.GetBox(id)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, e.view(b, ""))
}

func (e *E2B) killRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	if err := e.box(r.Context(), id, caller.AccessAll); err != nil {
		return err
	}
	if err := e.core.RemoveBox(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (e *E2B) timeoutRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b struct {
		Timeout int `json:"timeout"`
	}
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	if b.Timeout <= 0 || b.Timeout > MaxTimeout {
		return api.Invalid("timeout", "timeout %d s: give 1 to %d seconds", b.Timeout, MaxTimeout)
	}
	if err := e.box(r.Context(), id, caller.AccessMember); err != nil {
		return err
	}
	if _, err := e.core.SetTTL(r.Context(), id, strconv.Itoa(b.Timeout)+"s"); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// pauseRoute stops the box (its files kept; its processes end). A
// sandbox paused already is a conflict, as E2B answers it.
func (e *E2B) pauseRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b struct {
		Memory *bool `json:"memory"`
	}
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	if b.Memory != nil && *b.Memory {
		return api.Invalid("memory", "a pause that keeps memory is not supported by Paddock yet: pause with keepMemory: false keeps the sandbox's files, not its processes")
	}
	if err := e.box(r.Context(), id, caller.AccessMember); err != nil {
		return err
	}
	bx, err := e.core.GetBox(id)
	if err != nil {
		return err
	}
	if bx.Desired != "running" {
		return api.Conflict("sandbox %s is paused already", id)
	}
	if _, err := e.core.StopBox(r.Context(), id, "user"); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type connectBody struct {
	Timeout *int  `json:"timeout"`
	Memory  *bool `json:"memory"`
}

// connectRoute starts a paused sandbox (from its files) and gives its
// time to live anew when the call gives one.
func (e *E2B) connectRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b connectBody
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	bx, started, err := e.resume(r.Context(), id, b)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if started {
		code = http.StatusCreated
	}
	return route.WriteJSON(w, code, e.view(bx, key(r)))
}

// resumeRoute is E2B's older resume: a connect that answers 409 for a
// sandbox that runs.
func (e *E2B) resumeRoute(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("sandboxID")
	audit.From(r.Context()).About(id, "")
	var b struct {
		Timeout   *int  `json:"timeout"`
		AutoPause *bool `json:"autoPause"`
	}
	if err := route.Decode(r, &b); err != nil {
		return err
	}
	if err := e.box(r.Context(), id, caller.AccessMember); err != nil {
		return err
	}
	if bx, err := e.core.GetBox(id); err == nil && bx.Desired == "running" {
		return api.Conflict("sandbox %s is running", id)
	}
	bx, _, err := e.resume(r.Context(), id, connectBody{Timeout: b.Timeout})
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, e.view(bx, key(r)))
}

func (e *E2B) resume(ctx context.Context, id string, b connectBody) (api.Box, bool, error) {
	if b.Timeout != nil && (*b.Timeout <= 0 || *b.Timeout > MaxTimeout) {
		return api.Box{}, false, api.Invalid("timeout", "timeout %d s: give 1 to %d seconds", *b.Timeout, MaxTimeout)
	}
	if err := e.box(ctx, id, caller.AccessMember); err != nil {
		return api.Box{}, false, err
	}
	bx, err := e.core.GetBox(id)
	if err != nil {
		return api.Box{}, false, err
	}
	started := false
	if bx.Desired != "running" {
		if bx, err = e.core.StartBox(ctx, id); err != nil {
			return api.Box{}, false, err
		}
		started = true
	}
	if b.Timeout != nil {
		if bx, err = e.core.SetTTL(ctx, id, strconv.Itoa(*b.Timeout)+"s"); err != nil {
			return api.Box{}, false, err
		}
	}
	e.ready(ctx, id) // a box made otherwise gets E2B's home too
	return bx, started, nil
}

// ready readies a running box for E2B's SDKs, which write to
// /home/user: the box's user's home is linked there. Its warm exec is
// started first (where the engine has them), so that this command and
// the SDK's first do not each pay an exec's start.
func (e *E2B) ready(ctx context.Context, box string) {
	if b, err := e.core.RunningBox(box); err == nil && driver.WarmExec.Has(e.drv) {
		if _, err := driver.WarmExec.Do(ctx, e.drv, b.Key()); err != nil {
			e.log.Debug("warm exec", "box", box, "err", err)
		}
	}
	if _, err := e.sh(ctx, box, "root", linkHome); err != nil {
		e.log.Warn("linking /home/user", "box", box, "err", err)
	}
}

// unsupportedRoutes are E2B's control routes that Paddock does not
// serve yet, each answered with E2B's error shape and why.
var unsupportedRoutes = []struct{ pattern, why string }{
	{"PUT " + Prefix + "/sandboxes/{sandboxID}/network", "network rules through E2B's API are not supported by Paddock: give the box a Paddock egress policy"},
	{"DELETE " + Prefix + "/templates/{templateID}", "removing one snapshot is not supported by Paddock: a box's snapshots go with it ('paddock rm BOX')"},
}

func (e *E2B) refuse(why string) route.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if id := r.PathValue("sandboxID"); id != "" {
			if err := e.box(r.Context(), id, caller.AccessViewer); err != nil {
				return err
			}
		}
		return unsupported("%s", why)
	}
}

// unescape undoes the SDKs' two encodings of a metadata filter's key or
// value (each pair encoded, then the pairs as a query string).
func unescape(s string) (string, error) {
	s, err := url.QueryUnescape(s)
	if err != nil {
		return "", err
	}
	return url.QueryUnescape(s)
}
