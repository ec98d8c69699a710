// Package agents is the coding agents of the server's agent table: the
// table (List), what a box has of each for a user (InBox: installed, and
// where its credentials would come from), and a prompt: an agent run on
// a task as a job, with the secrets of the user who asks in its
// environment only (Prompt), with their API routes (Routes), over the
// core's Core and the jobs.
package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Core is what the agents need of paddockd's core (package service's
// Service has it): a running box; a short command's output from one;
// whether a box has the credential broker (and why not); a box's
// stand-in for a brokered secret; a sealed secret's value; and an
// agent's base-URL variables pointed at the broker.
type Core interface {
	RunningBox(name string) (store.Box, error)
	Output(ctx context.Context, box string, cmd []string) (stdout, stderr string, code int, err error)
	BrokerOn(b store.Box) bool
	NoBroker(b store.Box) string
	StandIn(b store.Box, via int64, row store.SecretRow) string
	OpenSecret(name string, sealed []byte) ([]byte, error)
	AgentBaseURLs(b store.Box, via int64, urls map[string]string) (map[string]string, error)
}

// JobStarter starts a job with secrets in its environment only, its
// command labelled (package jobs).
type JobStarter interface {
	StartWith(name string, p api.ExecPost, secrets map[string]string, label string) (api.Job, error)
}

// Agents is the agent table of one server, and its prompts.
type Agents struct {
	core  Core
	store *store.Store
	jobs  JobStarter
	cfg   *config.Config
}

// New is the agents over core, the store, the jobs and the
// configuration (its agent table).
func New(core Core, st *store.Store, jobs JobStarter, cfg *config.Config) *Agents {
	return &Agents{core: core, store: st, jobs: jobs, cfg: cfg}
}

// List lists the agent table.
func (ag *Agents) List() []api.Agent {
	out := []api.Agent{}
	for n, a := range ag.cfg.Agents {
		out = append(out, api.Agent{Name: n, Command: a.Command, Secrets: a.Secrets, Required: a.Required})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Prompt runs an agent non-interactively on a task, as a job: the agent's
// command with the task as its last argument (no shell in between), its
// secrets in its environment only. A missing secret is an error before
// anything starts.
//
// The secrets are those of the user who asks (theirs, or shared with
// them), whoever owns the box: a member of a box shared with them runs
// an agent on their own keys, never on the owner's (which they could
// read from the agent's environment). A brokered one goes in as a
// stand-in that names them, so the broker spends it under their name.
func (ag *Agents) Prompt(ctx context.Context, name string, p api.PromptPost) (api.Job, error) {
	b, err := ag.core.RunningBox(name)
	if err != nil {
		return api.Job{}, err
	}
	asker := askerOf(ctx, b)
	agentName := p.Agent
	if agentName == "" {
		agentName = b.Agent
	}
	if agentName == "" {
		agentName = ag.cfg.DefaultAgent
	}
	agent, ok := ag.cfg.Agents[agentName]
	if !ok {
		var names []string
		for n := range ag.cfg.Agents {
			names = append(names, n)
		}
		sort.Strings(names)
		return api.Job{}, api.Invalid("agent", "no agent named %q: use one of %s", agentName, strings.Join(names, ", "))
	}
	if agent.NoTask != "" {
		return api.Job{}, api.Invalid("agent", "agent %q takes no tasks: %s", agentName, agent.NoTask)
	}
	if strings.TrimSpace(p.Task) == "" {
		return api.Job{}, api.Invalid("task", "the task is empty")
	}
	env := map[string]string{}
	var missing []string
	for _, sec := range append(append([]string{}, agent.Secrets...), agent.Required...) {
		if _, done := env[sec]; done {
			continue
		}
		row, err := ag.store.SecretFor(asker, sec)
		if errors.Is(err, store.ErrNotFound) {
			if slices.Contains(agent.Required, sec) {
				missing = append(missing, sec)
			}
			continue
		} else if err != nil {
			return api.Job{}, err
		}
		if len(row.Broker.Hosts) > 0 {
			// Brokered: the command's environment has the box's
			// stand-in (CheckExec), never the value; where there is no
			// broker, the agent goes without.
			if !ag.core.BrokerOn(b) {
				return api.Job{}, api.Invalid("secrets", "secret %s is brokered, so its value never enters a box, and box %s has no broker: %s",
					sec, name, ag.core.NoBroker(b))
			}
			env[sec] = ag.core.StandIn(b, asker, row)
			continue
		}
		v, err := ag.core.OpenSecret(sec, row.Sealed)
		if err != nil {
			return api.Job{}, fmt.Errorf("secret %s cannot be opened: %w", sec, err)
		}
		env[sec] = string(v)
	}
	if len(missing) > 0 {
		return api.Job{}, api.Invalid("secrets", "agent %q needs the secret(s) %s: set them with 'paddock secret set NAME' (the value on stdin)",
			agentName, strings.Join(missing, ", "))
	}
	// What 'paddock agents BOX' says of it decides: installed, and with
	// credentials when it runs on a secret or its own login.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	st, err := ag.agentStates(actx, b, asker, []string{agentName})
	if err != nil {
		return api.Job{}, err
	}
	if st[0].Hint != "" {
		return api.Job{}, api.Invalid("agent", "%s", st[0].Hint)
	}
	urls, err := ag.core.AgentBaseURLs(b, asker, agent.BaseURLs)
	if err != nil {
		return api.Job{}, err
	}
	for k, v := range urls {
		env[k] = v
	}
	cmd := append(append([]string{}, agent.Command...), p.Task)
	return ag.jobs.StartWith(name, api.ExecPost{Cmd: cmd, WorkDir: p.WorkDir}, env, "agent "+agentName)
}

// askerOf is the user of ctx, whose secrets a prompt in box b runs with:
// the box's owner when no user asks (paddockd itself).
func askerOf(ctx context.Context, b store.Box) int64 {
	if id := caller.OwnerID(ctx); id != 0 {
		return id
	}
	return b.Owner
}

// agentHint says why a prompt to an agent in a box would not run, and what
// to do ("" when it would): the agent must be installed in the box, have
// its required secrets, and an agent that has logins (one that runs on a
// subscription or an API key) must have one of its secrets or its login.
func agentHint(box, name string, a config.Agent, ba api.BoxAgent) string {
	switch {
	case a.NoTask != "":
		return fmt.Sprintf("agent %q takes no tasks: %s", name, a.NoTask)
	case !ba.Installed:
		return fmt.Sprintf("agent %q is not installed in box %q (no %s there): install it in the box, or choose one it has ('paddock agents %s')", name, box, a.Command[0], box)
	case len(ba.Missing) > 0:
		return fmt.Sprintf("agent %q needs the secret(s) %s: set them with 'paddock secret set NAME' (the value on stdin)", name, strings.Join(ba.Missing, ", "))
	case len(a.Logins) > 0 && ba.Credentials == "" && len(a.Secrets) > 0:
		return fmt.Sprintf("agent %q has no credentials in box %q: set its secret ('paddock secret set %s', the value on stdin) or log in inside the box ('paddock exec -t %s -- %s')", name, box, a.Secrets[0], box, a.Command[0])
	case len(a.Logins) > 0 && ba.Credentials == "":
		return fmt.Sprintf("agent %q has no credentials in box %q: log in inside the box ('paddock exec -t %s -- %s')", name, box, box, a.Command[0])
	}
	return ""
}

// InBox tells, for each agent of the table, whether the box has it
// installed and where its credentials would come from for a prompt of
// the user of ctx: a secret of theirs, or the agent's own login in the
// box (for subscriptions). No value is read: the box is asked whether the
// files exist.
func (ag *Agents) InBox(ctx context.Context, name string) ([]api.BoxAgent, error) {
	b, err := ag.core.RunningBox(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ag.cfg.Agents))
	for n := range ag.cfg.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return ag.agentStates(ctx, b, askerOf(ctx, b), names)
}

// agentStates asks a running box about the named agents, in one exec, for
// a prompt with user via's secrets.
func (ag *Agents) agentStates(ctx context.Context, b store.Box, via int64, names []string) ([]api.BoxAgent, error) {
	name := b.Name
	// One exec asks the box for every agent: a line "NAME installed|absent
	// login|none" each. Names and paths go in as arguments, not as code.
	script := `while [ $# -gt 0 ]; do n=$1; c=$2; shift 2; l=none; i=absent
command -v "$c" >/dev/null 2>&1 && i=installed
while [ $# -gt 0 ] && [ "$1" != -- ]; do [ -s "$HOME/$1" ] && l=login; shift; done; shift
echo "$n $i $l"; done`
	cmd := []string{"sh", "-c", script, "agents"}
	for _, n := range names {
		a := ag.cfg.Agents[n]
		cmd = append(cmd, n, a.Command[0])
		cmd = append(cmd, a.Logins...)
		cmd = append(cmd, "--")
	}
	out, errs, code, err := ag.core.Output(ctx, name, cmd)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("asking box %s about its agents: exit %d: %s", name, code, errs)
	}
	seen := map[string][2]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			seen[f[0]] = [2]string{f[1], f[2]}
		}
	}
	res := []api.BoxAgent{}
	for _, n := range names {
		a := ag.cfg.Agents[n]
		ba := api.BoxAgent{Name: n, Installed: seen[n][0] == "installed"}
		for _, sec := range append(append([]string{}, a.Required...), a.Secrets...) {
			row, err := ag.store.SecretFor(via, sec)
			switch {
			case err == nil && ba.Credentials == "" && len(row.Broker.Hosts) > 0 && ag.core.BrokerOn(b):
				ba.Credentials = "brokered secret " + sec
			case err == nil && ba.Credentials == "":
				ba.Credentials = "secret " + sec
			case errors.Is(err, store.ErrNotFound) && slices.Contains(a.Required, sec) && !slices.Contains(ba.Missing, sec):
				ba.Missing = append(ba.Missing, sec)
			case err != nil && !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
		if ba.Credentials == "" {
			for _, sec := range a.Secrets {
				if _, ok := b.Env[sec]; ok {
					ba.Credentials = "env " + sec
					break
				}
			}
		}
		if ba.Credentials == "" && seen[n][1] == "login" {
			ba.Credentials = "login"
		}
		ba.Hint = agentHint(name, n, a, ba)
		res = append(res, ba)
	}
	return res, nil
}
