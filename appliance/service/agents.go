package service

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
)

var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// SetSecret stores a secret of the user of ctx, encrypted; it is never
// shown back. It goes into that user's boxes only; an owner may share it,
// and then members' boxes that have no secret of that name get it too
// (where their members can read it).
func (s *Service) SetSecret(ctx context.Context, name string, value []byte, shared bool) error {
	if !secretName.MatchString(name) {
		return invalid("name", "bad secret name %q: use an environment variable name (letters, digits, _)", name)
	}
	if len(value) == 0 || len(value) > 64<<10 {
		return invalid("value", "a secret must have 1 byte to 64 KiB")
	}
	if shared {
		if err := requireOwner(ctx, "share secrets"); err != nil {
			return err
		}
	}
	if s.Sealer == nil {
		return errors.New("secrets are not configured on this server")
	}
	return s.Store.PutSecret(ownerID(ctx), name, s.Sealer.Seal(name, value), shared, s.now())
}

// Secrets lists the names (never the values) of the secrets of the user of
// ctx and of those shared with everyone.
func (s *Service) Secrets(ctx context.Context) ([]api.Secret, error) {
	me := ownerID(ctx)
	infos, err := s.Store.Secrets(me)
	if err != nil {
		return nil, err
	}
	out := []api.Secret{}
	for _, i := range infos {
		out = append(out, api.Secret{Name: i.Name, Updated: i.Updated, Shared: i.Shared, Mine: i.Owner == me})
	}
	return out, nil
}

// RemoveSecret removes a secret of the user of ctx.
func (s *Service) RemoveSecret(ctx context.Context, name string) error {
	if err := s.Store.DeleteSecret(ownerID(ctx), name); errors.Is(err, store.ErrNotFound) {
		return notFound("secret", name)
	} else if err != nil {
		return err
	}
	return nil
}

// Agents lists the agent table.
func (s *Service) Agents() []api.Agent {
	out := []api.Agent{}
	for n, a := range s.Cfg.Agents {
		out = append(out, api.Agent{Name: n, Command: a.Command, Secrets: a.Secrets})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Prompt runs an agent non-interactively on a task, as a job: the agent's
// command with the task as its last argument (no shell in between), its
// secrets in its environment only. A missing secret is an error before
// anything starts.
func (s *Service) Prompt(name string, p api.PromptPost) (api.Job, error) {
	b, err := s.runningBox(name)
	if err != nil {
		return api.Job{}, err
	}
	agentName := p.Agent
	if agentName == "" {
		agentName = b.Agent
	}
	if agentName == "" {
		agentName = s.Cfg.DefaultAgent
	}
	agent, ok := s.Cfg.Agents[agentName]
	if !ok {
		var names []string
		for n := range s.Cfg.Agents {
			names = append(names, n)
		}
		sort.Strings(names)
		return api.Job{}, invalid("agent", "no agent named %q: use one of %s", agentName, strings.Join(names, ", "))
	}
	if strings.TrimSpace(p.Task) == "" {
		return api.Job{}, invalid("task", "the task is empty")
	}
	env := map[string]string{}
	var missing []string
	for _, sec := range agent.Secrets {
		sealed, err := s.Store.Secret(b.Owner, sec) // the box owner's, whoever asks
		if errors.Is(err, store.ErrNotFound) {
			missing = append(missing, sec)
			continue
		} else if err != nil {
			return api.Job{}, err
		}
		v, err := s.Sealer.Open(sec, sealed)
		if err != nil {
			return api.Job{}, fmt.Errorf("secret %s cannot be opened: %w", sec, err)
		}
		env[sec] = string(v)
	}
	if len(missing) > 0 {
		return api.Job{}, invalid("secrets", "agent %q needs the secret(s) %s: set them with 'paddock secret set NAME' (the value on stdin)",
			agentName, strings.Join(missing, ", "))
	}
	cmd := append(append([]string{}, agent.Command...), p.Task)
	return s.startJob(name, api.ExecPost{Cmd: cmd, WorkDir: p.WorkDir}, env, "agent "+agentName)
}
