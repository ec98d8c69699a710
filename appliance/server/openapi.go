package server

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/openapi"
	"github.com/paddock-dev/paddock/appliance/version"
)

// ops documents every /v1 route; package openapi checks it against the
// route table, both ways, whenever the document is built.
var ops = map[string]openapi.Op{
	"GET /v1/whoami":                           {Tag: "account", Summary: "Who the token or session belongs to, and the server's version", Response: api.Whoami{}},
	"POST /v1/logout":                          {Tag: "account", Summary: "Revoke the token this request was made with", Status: 204},
	"POST /v1/login/device":                    {Tag: "account", Summary: "Start a device login: a code for a person to approve at /device", Request: api.DevicePost{}, Response: api.DeviceCode{}},
	"POST /v1/login/device/token":              {Tag: "account", Summary: "Poll a device login; the token once approved", Request: api.DeviceTokenPost{}, Response: api.DeviceToken{}},
	"POST /v1/signin-links":                    {Tag: "account", Summary: "A single-use link, good for two minutes, that signs a browser in to the dashboard as the caller", Request: api.SignInPost{}, Response: api.SignInLink{}, Status: 201},
	"GET /v1/users":                            {Tag: "account", Summary: "Users (the owner sees all; a member, themselves)", Response: []api.User{}},
	"POST /v1/users/invites":                   {Tag: "account", Summary: "A one-time invitation link (the owner or an admin; an owner's link, the owner only)", Request: api.InvitePost{}, Response: api.InviteCreated{}, Status: 201},
	"GET /v1/users/invites":                    {Tag: "account", Summary: "The invitations not used yet and not expired: each one's id, role, maker and expiry, never its link (the owner or an admin)", Response: []api.Invite{}},
	"DELETE /v1/users/invites/{id}":            {Tag: "account", Summary: "Revoke an invitation: its link signs nobody up (the owner or an admin; an owner's invitation, the owner only)", Status: 204},
	"GET /v1/users/{user}/quota":               {Tag: "account", Summary: "A user's quota (what they may have at once: the server's defaults, but the fields set for them) and their use; a member reads their own", Response: api.UserQuota{}},
	"PUT /v1/users/{user}/quota":               {Tag: "account", Summary: "Set a member's quota: each field given (0: no bound); those in default go back to the server's default (the owner or an admin)", Request: api.QuotaPut{}, Response: api.UserQuota{}},
	"GET /v1/groups":                           {Tag: "account", Summary: "Groups of users, their members (by hand, or a sign-in provider's) and quotas (the owner or an admin)", Response: []api.Group{}},
	"PUT /v1/groups/{group}/members/{user}":    {Tag: "account", Summary: "Put a user in a group (the owner or an admin)", Status: 204},
	"DELETE /v1/groups/{group}/members/{user}": {Tag: "account", Summary: "Take a user put in a group by hand out of it (the owner or an admin)", Status: 204},
	"PUT /v1/groups/{group}/quota":             {Tag: "account", Summary: "Set a group's quota: each field given (0: no bound) holds for its members unless set for them (the most generous of their groups'); those in default are unset (the owner or an admin)", Request: api.QuotaPut{}, Response: api.Group{}},
	"DELETE /v1/users/{user}":                  {Tag: "account", Summary: "Remove a user: their tokens, sessions and keys go; boxes and drives stay (the owner or an admin; an owner, the owner only)", Status: 204},
	"GET /v1/tokens":                           {Tag: "account", Summary: "The caller's API tokens (names only)", Response: []api.TokenInfo{}},
	"POST /v1/tokens":                          {Tag: "account", Summary: "Make an API token; its value is in this answer only", Request: api.TokenPost{}, Response: api.TokenCreated{}, Status: 201},
	"DELETE /v1/tokens/{name}":                 {Tag: "account", Summary: "Revoke an API token", Status: 204},
	"GET /v1/keys":                             {Tag: "account", Summary: "The caller's SSH public keys", Response: []api.Key{}},
	"POST /v1/keys":                            {Tag: "account", Summary: "Add an SSH public key", Request: api.KeyPost{}, Response: api.Key{}, Status: 201},
	"DELETE /v1/keys/{name}":                   {Tag: "account", Summary: "Remove an SSH key", Status: 204},
	"GET /v1/secrets":                          {Tag: "account", Summary: "Secrets the caller's boxes get (names, never values)", Response: []api.Secret{}},
	"PUT /v1/secrets/{name}": {Tag: "account", Summary: "Set a secret; the body is its value", RequestType: "text/plain", Status: 204, Query: [][2]string{
		{"shared", "true: an owner's secret for every user's boxes"},
		{"broker", "a host the secret may be sent to, through the credential broker (repeat it, or a comma list): boxes then get a stand-in, never the value"},
		{"header", "with broker: where the secret goes: x-api-key, bearer (the default), token, a header's name, or \"NAME: PREFIX\""},
		{"limit", "with broker: requests per box, as N/s, N/min, N/h or N/day"}}},
	"PUT /v1/secrets/{name}/broker": {Tag: "account", Summary: "Change how a secret is brokered, keeping its value (no hosts: not brokered)", Request: api.SecretBroker{}, Status: 204},
	"DELETE /v1/secrets/{name}":     {Tag: "account", Summary: "Remove a secret", Status: 204},
	"GET /v1/images":                {Tag: "images", Summary: "Users' own images the caller may make boxes from (an admin: every user's)", Response: []api.Image{}},
	"POST /v1/images": {Tag: "images", Summary: "Build an image from a Dockerfile in a builder box; the body is the build context as a tar. The build streams as server-sent events", RequestType: "application/x-tar", ResponseType: "text/event-stream", Response: api.BuildEvent{},
		Notes: "Events: log (a line of the build's output), then image (the image) or error. A request refused before the build starts (a bad name, a FROM of an image that is not allowed, a context that is not a safe archive) is an ordinary error answer.",
		Query: [][2]string{{"name", "the image's name"}, {"tag", "its tag (latest)"}, {"dockerfile", "the Dockerfile's path in the context (Dockerfile)"}, {"policy", "the builder box's egress policy (allow-all)"}, {"project", "the Boxfile project that declares the image"}}},
	"GET /v1/images/{name}":                  {Tag: "images", Summary: "One image, by NAME[:TAG], OWNER/NAME[:TAG] (URL-escaped), its id or an id prefix", Response: api.Image{}},
	"DELETE /v1/images/{name}":               {Tag: "images", Summary: "Remove one of the caller's images (boxes made from it keep it)", Status: 204},
	"PUT /v1/images/{name}/shares":           {Tag: "images", Summary: "Set who else may make boxes from an image (every tag of its name): users, groups, everyone (the owner or an admin)", Request: api.ImageShares{}, Response: api.Image{}},
	"GET /v1/boxes":                          {Tag: "boxes", Summary: "The boxes the caller sees", Response: []api.Box{}, Query: [][2]string{{"label", "KEY=VALUE: only boxes with this label (repeat: with all of them)"}}},
	"POST /v1/boxes":                         {Tag: "boxes", Summary: "Create a box (declared, then reconciled; answers once it runs or failed)", Request: api.BoxPost{}, Response: api.Box{}, Status: 201},
	"GET /v1/boxes/{name}":                   {Tag: "boxes", Summary: "One box", Response: api.Box{}, Query: [][2]string{{"detail", "1: also ask the box how its Docker engine is (ready, up, ...)"}}},
	"DELETE /v1/boxes/{name}":                {Tag: "boxes", Summary: "Remove a box, its /var/lib/docker and snapshots; drives stay", Status: 204},
	"POST /v1/boxes/{name}/stop":             {Tag: "boxes", Summary: "Snapshot the box's filesystem, then stop it", Response: api.Box{}},
	"POST /v1/boxes/{name}/start":            {Tag: "boxes", Summary: "Start a stopped box; its TTL starts again", Response: api.Box{}},
	"PUT /v1/boxes/{name}/ttl":               {Tag: "boxes", Summary: "A new TTL from now (empty: none)", Request: api.TTLPut{}, Response: api.Box{}},
	"GET /v1/boxes/{name}/snapshots":         {Tag: "snapshots", Summary: "A box's snapshots", Response: []api.Snapshot{}},
	"POST /v1/boxes/{name}/snapshots":        {Tag: "snapshots", Summary: "Snapshot a box's filesystem now", Response: api.Snapshot{}, Status: 201},
	"POST /v1/boxes/{name}/restore":          {Tag: "snapshots", Summary: "Bring a box's filesystem back to a snapshot (default: the newest)", Request: api.RestorePost{}, Response: api.Box{}},
	"POST /v1/boxes/{name}/move":             {Tag: "nodes", Summary: "Move a box, with the drives it mounts (and the boxes in with that share them), to another server: stopped with a snapshot, shipped, made and started there (the owner's)", Request: api.MovePost{}, Response: api.Box{}},
	"POST /v1/drives/{name}/move":            {Tag: "nodes", Summary: "Move a drive, with the boxes that mount it (all named in with), to another server (the owner's)", Request: api.MovePost{}, Response: api.Drive{}},
	"POST /v1/boxes/{name}/fork":             {Tag: "snapshots", Summary: "A new box from a snapshot of this one (default: one taken now)", Request: api.ForkPost{}, Response: api.Box{}, Status: 201},
	"POST /v1/boxes/{name}/exec":             {Tag: "exec", Summary: "Run a command attached: an HTTP upgrade to the exec stream", Request: api.ExecPost{}, Upgrade: api.UpgradeExec, Notes: "Send 'Upgrade: paddock-exec/1'. After 101 both sides send frames: a type byte, a big-endian uint32 length and the payload. Client: 0 stdin, 3 resize (rows, cols as two uint16), 4 end of stdin. Server: 1 stdout, 2 stderr, 7 notice (text for the person, not the command's output: that a sleeping box is being started), then 5 exit (int32) or 6 error (text)."},
	"GET /v1/boxes/{name}/terminal":          {Tag: "exec", Summary: "A login shell over a websocket (for browsers)", Upgrade: "websocket", Query: [][2]string{{"rows", "terminal rows"}, {"cols", "terminal columns"}}, Notes: "Binary messages carry the terminal's bytes both ways; a text message from the client is a size, {\"rows\":R,\"cols\":C}; the server's last text message is {\"exit\":CODE} or {\"error\":MESSAGE}. Refused from another origin."},
	"GET /v1/boxes/{name}/jobs":              {Tag: "exec", Summary: "A box's background jobs and prompts", Response: []api.Job{}},
	"POST /v1/boxes/{name}/jobs":             {Tag: "exec", Summary: "Run a command in the background; the server keeps its output", Request: api.ExecPost{}, Response: api.Job{}, Status: 201},
	"GET /v1/boxes/{name}/jobs/{id}":         {Tag: "exec", Summary: "One job", Response: api.Job{}},
	"GET /v1/boxes/{name}/jobs/{id}/log":     {Tag: "exec", Summary: "A job's output; with follow=1 it streams until the job ends", ResponseType: "text/plain", Query: [][2]string{{"follow", "1: keep streaming until the job ends"}}},
	"POST /v1/boxes/{name}/jobs/{id}/signal": {Tag: "exec", Summary: "Send a signal to a running job's process group (TERM by default; KILL ends one that ignores it)", Request: api.SignalPost{}, Response: api.Job{}},
	"POST /v1/boxes/{name}/jobs/{id}/input":  {Tag: "exec", Summary: "Send the body to the input of a running job started with stdin: true (in order, one send at a time; a send waits while the job does not read)", RequestType: "application/octet-stream", Response: api.JobInput{}, Query: [][2]string{{"eof", "1: end the job's input after this send"}}},
	"POST /v1/boxes/{name}/prompt":           {Tag: "exec", Summary: "Hand an agent a task; it runs as a job", Request: api.PromptPost{}, Response: api.Job{}, Status: 201},
	"GET /v1/agents":                         {Tag: "exec", Summary: "The agents the server knows", Response: []api.Agent{}},
	"GET /v1/boxes/{name}/metrics":           {Tag: "boxes", Summary: "What a box used: a sample every metrics_interval (CPU, memory, disk, network, processes), one a minute after an hour, kept for metrics_keep", Response: api.BoxMetrics{}, Query: [][2]string{{"since", "a duration back from now (90m, 1h, 2d) or a time (RFC 3339); default 15m"}}},
	"GET /v1/boxes/{name}/grants":            {Tag: "boxes", Summary: "Who the box is shared with, and how (its owner's, or an owner's or admin's)", Response: []api.Grant{}},
	"PUT /v1/boxes/{name}/grants/{user}":     {Tag: "boxes", Summary: "Share the box with a user: as a viewer (reads it) or a member (works in it; cannot remove, move, fork or share it, or change its policy)", Request: api.GrantPut{}, Response: api.Grant{}},
	"DELETE /v1/boxes/{name}/grants/{user}":  {Tag: "boxes", Summary: "Stop sharing the box with a user", Status: 204},
	"GET /v1/metrics":                        {Tag: "boxes", Summary: "The newest sample of each running box the caller sees", Response: []api.Sample{}},
	"GET /v1/boxes/{name}/ports":             {Tag: "boxes", Summary: "The TCP ports something listens on in a running box, each with its preview URL", Response: []api.Port{}},
	"GET /v1/boxes/{name}/agents":            {Tag: "exec", Summary: "The agents in a box and whether each has credentials", Response: []api.BoxAgent{}},
	"PUT /v1/boxes/{name}/files":             {Tag: "files", Summary: "Extract a tar into a folder of the box; refused whole if any entry would leave it", RequestType: "application/x-tar", Status: 204, Query: [][2]string{{"path", "the absolute folder in the box"}}},
	"GET /v1/boxes/{name}/files":             {Tag: "files", Summary: "A file or folder of the box as a tar", ResponseType: "application/x-tar", Query: [][2]string{{"path", "an absolute path in the box"}}},
	"GET /v1/boxes/{name}/download":          {Tag: "files", Summary: "One regular file of the box, as itself", ResponseType: "application/octet-stream", Query: [][2]string{{"path", "an absolute path in the box"}}},
	"GET /v1/boxes/{name}/dir":               {Tag: "files", Summary: "A folder's entries, as the box user sees them", Response: api.Dir{}, Query: [][2]string{{"path", "an absolute path in the box"}}},
	"GET /v1/boxes/{name}/screenshot":        {Tag: "desktop", Summary: "A PNG of the box's desktop now", ResponseType: "image/png"},
	"POST /v1/boxes/{name}/screenshots":      {Tag: "desktop", Summary: "Take a screenshot and keep it in the box's gallery (the 12 newest)", Response: api.Screenshot{}, Status: 201},
	"GET /v1/boxes/{name}/screenshots":       {Tag: "desktop", Summary: "The box's kept screenshots, newest first", Response: []api.Screenshot{}},
	"GET /v1/boxes/{name}/screenshots/{id}":  {Tag: "desktop", Summary: "One kept screenshot", ResponseType: "image/png"},
	"POST /v1/boxes/{name}/desktop/actions":  {Tag: "desktop", Summary: "Mouse and keyboard on the box's desktop: actions in the vocabulary of Anthropic's computer-use tool (and windows, launch, wait_idle), run in order, answered with each one's result and, when asked, a screenshot", Request: api.DesktopActionsPost{}, Response: api.DesktopActionsResult{}},
	"GET /v1/boxes/{name}/watch": {Tag: "files", Summary: "Watch a folder (or file) of the box: its changes as server-sent events, from inotify in the box, as the box's user", ResponseType: "text/event-stream", Response: api.WatchEvent{}, Query: [][2]string{{"path", "an absolute path in the box"}, {"recursive", "1: the folders under it too"}},
		Notes: "Each event's name is its type and its data a WatchEvent: first ready (the watches are set), then created, modified, removed and renamed (with from) as they happen, each with the path, its kind and size; dropped (count: events this client read too slowly for), overflow (the kernel's queue in the box overflowed: events were lost), error. A comment line every 15 s keeps proxies from closing it. Refused (403) for a path the box's user may not read."},
	"POST /v1/boxes/{name}/run":                    {Tag: "exec", Summary: "Run code in the box's code interpreter (a Jupyter kernel that keeps its state between runs): its output, the last expression's value and what it displayed (PNG, HTML...), or its error and traceback; past its timeout it is interrupted and the kernel answers on", Request: api.RunPost{}, Response: api.RunResult{}},
	"GET /v1/boxes/{name}/contexts":                {Tag: "exec", Summary: "The code interpreter's contexts (kernels) in the box", Response: []api.CodeContext{}},
	"POST /v1/boxes/{name}/contexts":               {Tag: "exec", Summary: "Start a context: a kernel of its own, with its own state", Request: api.ContextPost{}, Response: api.CodeContext{}, Status: 201},
	"POST /v1/boxes/{name}/contexts/{ctx}/restart": {Tag: "exec", Summary: "Start a context's kernel again (its state is gone)", Response: api.CodeContext{}},
	"DELETE /v1/boxes/{name}/contexts/{ctx}":       {Tag: "exec", Summary: "End a context's kernel and forget it", Status: 204},
	"POST /v1/boxes/{name}/desktop":                {Tag: "desktop", Summary: "A single-use ticket for the desktop page and its websocket", Response: api.DesktopTicket{}, Status: 201},
	"PUT /v1/boxes/{name}/policy":                  {Tag: "policies", Summary: "Change a box's policy; the rules change before this answers", Request: api.PolicyPut{}, Response: api.Box{}},
	"GET /v1/boxes/{name}/policy":                  {Tag: "policies", Summary: "What a box's firewall dropped and its resolver decided", Response: api.PolicyReport{}},
	"GET /v1/policies":                             {Tag: "policies", Summary: "Named policies and the boxes that use each", Response: []api.Policy{}},
	"POST /v1/policies":                            {Tag: "policies", Summary: "Make a named policy outside any Boxfile", Request: api.PolicyPost{}, Response: api.Policy{}, Status: 201},
	"PUT /v1/policies/{name}":                      {Tag: "policies", Summary: "Replace a policy's allowlists; its boxes get the new rules", Request: api.PolicySpec{}, Response: api.Policy{}},
	"DELETE /v1/policies/{name}":                   {Tag: "policies", Summary: "Remove a policy no box uses", Status: 204},
	"GET /v1/drives":                               {Tag: "drives", Summary: "Drives and the boxes that mount each", Response: []api.Drive{}},
	"POST /v1/drives":                              {Tag: "drives", Summary: "Make a drive", Request: api.DrivePost{}, Response: api.Drive{}, Status: 201},
	"DELETE /v1/drives/{name}":                     {Tag: "drives", Summary: "Remove a drive and its data (refused while mounted)", Status: 204},
	"GET /v1/drives/{name}/archive":                {Tag: "drives", Summary: "A drive's contents as a tar", ResponseType: "application/x-tar"},
	"PUT /v1/drives/{name}/archive":                {Tag: "drives", Summary: "Replace a drive's contents with a tar's (refused while mounted)", RequestType: "application/x-tar", Status: 204},
	"POST /v1/reconcile":                           {Tag: "projects", Summary: "Run the reconciler once", Response: api.ReconcileResult{}},
	"POST /v1/plan":                                {Tag: "projects", Summary: "What applying a Boxfile project would change", Request: api.PlanRequest{}, Response: api.Plan{}},
	"POST /v1/apply":                               {Tag: "projects", Summary: "Apply a plan made at a serial (refused if the state moved)", Request: api.ApplyRequest{}, Response: api.ApplyResult{}},
	"GET /v1/projects":                             {Tag: "projects", Summary: "Boxfile projects, their last apply and their drift", Response: []api.Project{}},
	"POST /v1/boxes/{name}/setup":                  {Tag: "projects", Summary: "Record the outcome of a Boxfile box's one-time setup", Request: api.SetupPost{}, Status: 204},
	"GET /v1/events":                               {Tag: "events", Summary: "Server-sent events: every object the caller sees, then 'ready', then each change", ResponseType: "text/event-stream", Notes: "Events: box, drive, job, snapshot (data: the object as the API shows it) and box-removed, drive-removed, job-removed, snapshot-removed (data: its key). With metrics=1, after 'ready', a metrics event (data: a Sample) for each running box at each sampling pass. A comment line every 15 s keeps proxies from closing it.", Query: [][2]string{{"metrics", "1: also each running box's samples, as they are taken"}}},
	"GET /v1/openapi.json":                         {Tag: "meta", Summary: "This document", Response: map[string]any{}},
	"GET /v1/nodes":                                {Tag: "nodes", Summary: "The servers boxes are placed on, the control plane's first (the owner's)", Response: []api.Node{}},
	"PUT /v1/nodes/{name}/labels":                  {Tag: "nodes", Summary: "Replace a server's labels (the owner's)", Request: api.NodeLabels{}, Response: api.Node{}},
	"PUT /v1/nodes/{name}/pool":                    {Tag: "nodes", Summary: "Replace a server's own warm pool: ready boxes of each type kept on it (the owner's)", Request: api.NodePool{}, Response: api.Node{}},
	"DELETE /v1/nodes/{name}":                      {Tag: "nodes", Summary: "Forget a server that holds no box, drive or snapshot (the owner's)", Status: 204},
	"POST /v1/nodes/{name}/drain":                  {Tag: "nodes", Summary: "Drain a server: no new box goes there, and its boxes move to others (the owner's)", Response: api.Drained{}},
	"POST /v1/nodes/{name}/lost":                   {Tag: "nodes", Summary: "Declare a server that is gone for good lost: its boxes are made again on the others from their newest snapshots in the object store, and it is forgotten (the owner's)", Response: api.NodeLost{}},
	"DELETE /v1/nodes/{name}/drain":                {Tag: "nodes", Summary: "Undrain a server: new boxes may go there again (the owner's)", Status: 204},
	"GET /v1/audit":                                {Tag: "audit", Summary: "The audit log, oldest first: the owner and admins see every entry; a member, their own actions and those about their boxes (the newest 1000 unless limit says)", Response: []api.AuditEntry{}, Query: [][2]string{{"box", "entries about this box"}, {"user", "entries of this user's actions"}, {"action", "this action, or a kind of them (box: box.create, box.stop...)"}, {"since", "a duration back from now (90m, 1h, 2d) or a time (RFC 3339)"}, {"after", "entries after this number (to follow the log)"}, {"limit", "the newest N, 1 to 10000"}}},
	"GET /v1/audit/verify":                         {Tag: "audit", Summary: "Check the audit log's chain of keyed hashes, and its end against the witnesses outside the server; where it breaks or what is missing (the owner or an admin)", Response: api.AuditCheck{}, Query: [][2]string{{"seen", "SEQ:HASH, the head the last check answered, which the client kept: entries the log no longer has are named"}}},
	"POST /v1/nodes/joins":                         {Tag: "nodes", Summary: "A one-time token, and the command that lets a server join with it (the owner's)", Response: api.NodeJoin{}, Status: 201},
}

// openapiState is the document, built once per server.
type openapiState struct {
	once sync.Once
	json []byte
	err  error
}

// Ops documents the /v1 routes (for tests of the document).
func Ops() map[string]openapi.Op { return ops }

// OpenAPI is the document of the API, built from the route table.
func (s *Server) OpenAPI() ([]byte, error) {
	s.doc.once.Do(func() {
		doc, err := openapi.Build("Paddock API", version.Version, "/"+api.Version, s.Routes(), ops, api.Error{})
		if err == nil {
			s.doc.json, err = json.MarshalIndent(doc, "", "  ")
		}
		s.doc.err = err
	})
	return s.doc.json, s.doc.err
}

func (s *Server) openapiDoc(w http.ResponseWriter, r *http.Request) error {
	b, err := s.OpenAPI()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	_, err = w.Write(b)
	return err
}
