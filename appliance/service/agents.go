package service

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
)

var secretName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// SetSecret stores a secret, encrypted; it is never shown back.
func (s *Service) SetSecret(name string, value []byte) error {
	if !secretName.MatchString(name) {
		return invalid("name", "bad secret name %q: use an environment variable name (letters, digits, _)", name)
	}
	if len(value) == 0 || len(value) > 64<<10 {
		return invalid("value", "a secret must have 1 byte to 64 KiB")
	}
	if s.Sealer == nil {
		return errors.New("secrets are not configured on this server")
	}
	return s.Store.PutSecret(name, s.Sealer.Seal(name, value), s.now())
}

// Secrets lists the secrets' names (never their values).
func (s *Service) Secrets() ([]api.Secret, error) {
	m, err := s.Store.SecretNames()
	if err != nil {
		return nil, err
	}
	out := []api.Secret{}
	for n, t := range m {
		out = append(out, api.Secret{Name: n, Updated: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// RemoveSecret removes a secret.
func (s *Service) RemoveSecret(name string) error {
	if err := s.Store.DeleteSecret(name); errors.Is(err, store.ErrNotFound) {
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
		sealed, err := s.Store.Secret(sec)
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
