package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// seenKeys are the digests of the keys the fake model API was sent,
// asked of it straight from the host (with its authority, which only
// the tests and the broker trust).
func seenKeys(t *testing.T) []string {
	t.Helper()
	return seenKeysAt(t, harness.InetModelAPI, "api.model.test")
}

// seenKeysAt asks the fake model API at ip (as host) what it was sent:
// that it answers there.
func seenKeysAt(t *testing.T, ip, host string) []string {
	t.Helper()
	pem, err := os.ReadFile(harness.InetCA())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: host}}}
	resp, err := hc.Get("https://" + ip + "/_seen")
	if err != nil {
		t.Fatalf("the fake model API at %s (%s): %v", ip, host, err)
	}
	defer resp.Body.Close()
	var out []string
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// The credential broker on the real engine, with a fake model API over
// real HTTPS in the test internet: a box under deny-all reaches the API
// through the broker with its stand-in, and the API gets the real key;
// the key is nowhere in the box (its processes' environments, its files,
// its process list, a prompt's log); the stand-in is refused from
// another box, to another host and once the secret is revoked; a rate
// limit holds; a member's box gets the owner's secret only once it is
// shared; a host that resolves to this machine is never dialled; the
// counts show on the box and refusals in the audit log.
func TestBroker(t *testing.T) {
	d := startDaemon(t, t.TempDir())
	t.Cleanup(d.Cleanup)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := d.Client()
	real := "sk-real-" + rand.Text()
	if err := c.SetSecret(ctx, "MODEL_KEY", []byte(real), false, &api.SecretBroker{Hosts: []string{"api.model.test"}, Header: "x-api-key"}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"bk", "bk2"} {
		if _, err := c.CreateBox(ctx, api.BoxPost{Name: b, Policy: "deny-all"}); err != nil {
			t.Fatal(err)
		}
	}
	sh := func(c *client.Client, box, script string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code, err := c.Exec(ctx, box, api.ExecPost{Cmd: []string{"sh", "-c", script}}, client.ExecIO{Stdout: &out, Stderr: &errb})
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return out.String() + errb.String(), code
	}
	// ask sends a message from a box, as an agent would, with the given
	// key, to the broker's address for a host: the answer and its status.
	ask := func(c *client.Client, box, host, key string) (string, string) {
		t.Helper()
		out, code := sh(c, box, `curl -sS -o /tmp/answer -w '%{http_code}' -X POST "$PADDOCK_BROKER/`+host+`/v1/messages" -H "x-api-key: `+key+`" --data-binary hello; echo; cat /tmp/answer`)
		if code != 0 {
			t.Fatalf("curl in %s: exit %d: %s", box, code, out)
		}
		status, body, _ := strings.Cut(out, "\n")
		return status, body
	}
	standIn, _ := sh(c, "bk", `printf %s "$MODEL_KEY"`)
	if !strings.HasPrefix(standIn, "pdk-MODEL_KEY-") {
		t.Fatalf("the box's MODEL_KEY is %q, not a stand-in", standIn)
	}
	before := len(seenKeys(t))
	status, body := ask(c, "bk", "api.model.test", "$MODEL_KEY")
	if status != "200" || !strings.Contains(body, "pong from api.model.test: hello") {
		t.Fatalf("through the broker: %s %s", status, body)
	}
	if seen := seenKeys(t); len(seen) != before+1 || seen[len(seen)-1] != digest(real) {
		t.Fatalf("the API was not sent the real key (%d keys seen, was %d)", len(seen), before)
	}
	// deny-all holds for everything else: the API itself is out of reach.
	if out, code := sh(c, "bk", `curl -sS -m 5 -k https://`+harness.InetModelAPI+`/v1/messages -d x`); code == 0 {
		t.Fatalf("a deny-all box reached the API straight: %s", out)
	}

	// The test agent's prompt runs through the broker, unchanged for
	// its user.
	job, err := c.Prompt(ctx, "bk", api.PromptPost{Agent: "api", Task: "what is 2+2"})
	if err != nil {
		t.Fatal(err)
	}
	var j api.Job
	waitFor(t, 60*time.Second, "the prompt's end", func() bool {
		j, err = c.Job(ctx, "bk", job.ID)
		return err == nil && j.State != "running"
	})
	var logb bytes.Buffer
	if err := c.JobLog(ctx, "bk", job.ID, false, &logb); err != nil {
		t.Fatal(err)
	}
	log := logb.String()
	if j.ExitCode == nil || *j.ExitCode != 0 {
		t.Fatalf("the prompt: %+v %s", j, log)
	}
	if !strings.Contains(log, "pong from api.model.test: what is 2+2") || strings.Contains(log, real) {
		t.Fatalf("the prompt's log: %s", log)
	}
	if seen := seenKeys(t); seen[len(seen)-1] != digest(real) {
		t.Fatal("the prompt's request did not carry the real key")
	}

	// The real key is nowhere in the box: not in any process's
	// environment (root reads them all), not in its files, not in its
	// process list, while a job holds the stand-in.
	if _, err := c.StartJob(ctx, "bk", api.ExecPost{Cmd: []string{"sleep", "300"}}); err != nil {
		t.Fatal(err)
	}
	// Every process's environment, read as the box's user or else as
	// root in the box (a process of either may be unreadable to the
	// other); one that neither reads and still runs is listed.
	environs := `for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null || sudo -n cat $p/environ 2>/dev/null || { [ -e $p/comm ] && echo "UNREAD $p"; }; echo; done`
	envs, _ := sh(c, "bk", environs)
	if strings.Contains(envs, "UNREAD") || !strings.Contains(envs, "MODEL_KEY=pdk-MODEL_KEY-") {
		t.Fatalf("the processes' environments, read whole, hold no stand-in or not all were read:\n%s", envs)
	}
	for what, script := range map[string]string{
		"environments": environs + ` | grep -caF "$1"`,
		"files":        `sudo -n grep -rlsF --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr "$1" / | head`,
		"processes":    `ps auxeww | grep -v grep | grep -cF "$1"`,
	} {
		var out, errb bytes.Buffer
		if _, err := c.Exec(ctx, "bk", api.ExecPost{Cmd: []string{"sh", "-c", script, "find", real}}, client.ExecIO{Stdout: &out, Stderr: &errb}); err != nil {
			t.Fatal(err)
		}
		if o := strings.TrimSpace(out.String()); o != "" && o != "0" {
			t.Fatalf("the real key is in the box's %s: %s", what, o)
		}
	}

	// Another box's stand-in, and another host, are refused.
	if status, body := ask(c, "bk2", "api.model.test", standIn); status != "403" || !strings.Contains(body, "not box bk2's") {
		t.Fatalf("bk's stand-in from bk2: %s %s", status, body)
	}
	if status, body := ask(c, "bk2", "api.model.test", "$MODEL_KEY"); status != "200" {
		t.Fatalf("bk2's own stand-in: %s %s", status, body)
	}
	if status, body := ask(c, "bk", "other-api.test", "$MODEL_KEY"); status != "403" || !strings.Contains(body, "is not sent to other-api.test") {
		t.Fatalf("to another host: %s %s", status, body)
	}
	// The secret in a header it does not go in is refused too.
	if out, _ := sh(c, "bk", `curl -sS -w ' %{http_code}' -X POST "$PADDOCK_BROKER/api.model.test/v1/messages" -H "Authorization: Bearer $MODEL_KEY" -d x`); !strings.HasSuffix(out, " 400") {
		t.Fatalf("in another header: %s", out)
	}

	// A rate: the third request in its day is refused, once (a window no
	// machine is slow enough to see pass).
	if err := c.SetSecret(ctx, "SLOW_KEY", []byte("sk-slow-"+rand.Text()), false, &api.SecretBroker{Hosts: []string{"api.model.test"}, Header: "x-api-key", Limit: "2/day"}); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for range 3 {
		s, _ := ask(c, "bk", "api.model.test", "$SLOW_KEY")
		codes = append(codes, s)
	}
	if !slices.Equal(codes, []string{"200", "200", "429"}) {
		t.Fatalf("with a limit of 2/day: %v", codes)
	}

	// A host that resolves to this machine is never dialled.
	if err := c.SetSecret(ctx, "LOCAL_KEY", []byte("sk-local"), false, &api.SecretBroker{Hosts: []string{"local-api.test"}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := sh(c, "bk", `curl -sS -w ' %{http_code}' "$PADDOCK_BROKER/local-api.test/" -H "Authorization: Bearer $LOCAL_KEY"`); !strings.HasSuffix(out, " 502") || !strings.Contains(out, "never sends a secret") {
		t.Fatalf("a host at 127.0.0.1: %s", out)
	}

	// Nor a host that resolves to a private or the metadata address, where
	// the fake model API answers (the test reaches it there: something
	// listens, so a refusal is the broker's own).
	for host, ip := range map[string]string{"private-api.test": harness.InetPrivateAPI, "metadata-api.test": "169.254.169.254"} {
		t.Run("Attack"+strings.ToUpper(host[:1])+host[1:strings.Index(host, "-")]+"Host", func(t *testing.T) {
			if n := len(seenKeysAt(t, ip, host)); n < 0 {
				t.Fatal("no answer")
			}
			name := strings.ToUpper(strings.Split(host, "-")[0]) + "_KEY"
			if err := c.SetSecret(ctx, name, []byte("sk-"+name), false, &api.SecretBroker{Hosts: []string{host}, Header: "x-api-key"}); err != nil {
				t.Fatal(err)
			}
			before := len(seenKeys(t))
			out, _ := sh(c, "bk", `curl -sS -w ' %{http_code}' -X POST "$PADDOCK_BROKER/`+host+`/v1/messages" -H "x-api-key: $`+name+`" -d x`)
			if !strings.HasSuffix(out, " 502") || !strings.Contains(out, "never sends a secret") {
				t.Fatalf("a host at %s: %s", ip, out)
			}
			if seen := seenKeys(t); len(seen) != before || slices.Contains(seen, digest("sk-"+name)) {
				t.Fatalf("the API at %s was sent a key", ip)
			}
		})
	}

	// A member's box does not get the owner's secret until it is shared.
	mia := member(t, d, "mia")
	if _, err := mia.CreateBox(ctx, api.BoxPost{Name: "mias", Policy: "deny-all"}); err != nil {
		t.Fatal(err)
	}
	if out, _ := sh(mia, "mias", `printf %s "${MODEL_KEY:-none}"`); out != "none" {
		t.Fatalf("the member's box has MODEL_KEY: %s", out)
	}
	if status, body := ask(mia, "mias", "api.model.test", standIn); status != "403" || !strings.Contains(body, "has no brokered secret MODEL_KEY") {
		t.Fatalf("the owner's stand-in from a member's box: %s %s", status, body)
	}
	if err := c.SetSecret(ctx, "MODEL_KEY", []byte(real), true, &api.SecretBroker{Hosts: []string{"api.model.test"}, Header: "x-api-key"}); err != nil {
		t.Fatal(err)
	}
	if status, body := ask(mia, "mias", "api.model.test", "$MODEL_KEY"); status != "200" {
		t.Fatalf("the member's box, once shared: %s %s", status, body)
	}

	// Revoked: the next request is refused.
	if err := c.RemoveSecret(ctx, "MODEL_KEY"); err != nil {
		t.Fatal(err)
	}
	if status, body := ask(c, "bk", "api.model.test", standIn); status != "403" || !strings.Contains(body, "no brokered secret MODEL_KEY") {
		t.Fatalf("after revoking: %s %s", status, body)
	}

	// The counts, on the box; the refusals, in the audit log (the
	// broker counts as it answers, so they are waited for).
	var uses map[string]api.BrokerUse
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		b, err := c.Box(ctx, "bk")
		if err != nil {
			t.Fatal(err)
		}
		uses = map[string]api.BrokerUse{}
		for _, u := range b.Broker {
			uses[u.Secret] = u
		}
		m := uses["MODEL_KEY"]
		if m.Requests == 2 && m.Refused == 3 && uses["SLOW_KEY"].Refused == 1 || time.Now().After(deadline) {
			break
		}
	}
	m := uses["MODEL_KEY"]
	if m.Requests != 2 || m.Status["2xx"] != 2 || m.Refused != 3 || m.BytesUp != int64(len("hello")+len("what is 2+2")) || m.BytesDown == 0 {
		t.Fatalf("bk's MODEL_KEY counts: %+v", m)
	}
	if s := uses["SLOW_KEY"]; s.Requests != 2 || s.Refused != 1 {
		t.Fatalf("bk's SLOW_KEY counts: %+v", s)
	}
	cli := exec.Command(bins.Paddock, "show", "bk")
	cli.Env = append(append(os.Environ(), d.CLIEnv()...), "PADDOCK_CONFIG_DIR="+t.TempDir())
	outb, err := cli.CombinedOutput()
	out := string(outb)
	if err != nil || !regexp.MustCompile(`(?m)^broker: +MODEL_KEY 2 requests \(2xx 2\), 3 refused, 16 bytes up`).MatchString(out) {
		t.Fatalf("show: %v\n%s", err, out)
	}
	// A removed box's counts stay in its removal's audit entry.
	if err := c.RemoveBox(ctx, "bk2"); err != nil {
		t.Fatal(err)
	}
	removed, err := c.Audit(ctx, client.AuditQuery{Action: "box.remove", Box: "bk2"})
	if err != nil || len(removed) != 1 || !strings.Contains(string(removed[0].Detail), `"secret":"MODEL_KEY","requests":1,"refused":1`) {
		t.Fatalf("bk2's removal in the audit log: %v %+v", err, removed)
	}
	entries, err := c.Audit(ctx, client.AuditQuery{Action: "broker.refused"})
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{}
	for _, e := range entries {
		reasons = append(reasons, e.Box+": "+e.Result)
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{"bk2: this stand-in for MODEL_KEY is not box bk2's", "bk: secret MODEL_KEY is not sent to other-api.test", "bk: box bk is past its limit of 2/day on secret SLOW_KEY", "mias: box mias has no brokered secret MODEL_KEY"} {
		if !strings.Contains(all, want) {
			t.Fatalf("the audit log has no %q:\n%s", want, all)
		}
	}

	t.Run("AttackPromptInASharedBox", func(t *testing.T) { attackPromptInASharedBox(t, ctx, c, mia, sh) })
}

// A member of a box shared with them, prompting an agent in it, gets the
// agent run on their own keys, never on the owner's (which they would
// read from the agent's environment): with none of their own the prompt
// is refused; with their own brokered key, the API gets theirs, and the
// box's counts book it to them; the owner's prompt still runs on the
// owner's.
func attackPromptInASharedBox(t *testing.T, ctx context.Context, c, mia *client.Client, sh func(*client.Client, string, string) (string, int)) {
	ownerKey, miaKey := "sk-owner-"+rand.Text(), "sk-mia-"+rand.Text()
	brk := &api.SecretBroker{Hosts: []string{"api.model.test"}, Header: "x-api-key"}
	if err := c.SetSecret(ctx, "MODEL_KEY", []byte(ownerKey), false, brk); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateBox(ctx, api.BoxPost{Name: "team", Policy: "deny-all"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Share(ctx, "team", "mia", "member"); err != nil {
		t.Fatal(err)
	}
	prompt := func(who *client.Client, task string) (string, error) {
		t.Helper()
		job, err := who.Prompt(ctx, "team", api.PromptPost{Agent: "api", Task: task})
		if err != nil {
			return "", err
		}
		var j api.Job
		waitFor(t, 60*time.Second, "the prompt's end", func() bool {
			j, err = who.Job(ctx, "team", job.ID)
			return err == nil && j.State != "running"
		})
		var log bytes.Buffer
		if err := who.JobLog(ctx, "team", job.ID, false, &log); err != nil {
			t.Fatal(err)
		}
		if j.ExitCode == nil || *j.ExitCode != 0 || !strings.Contains(log.String(), "pong from api.model.test: "+task) {
			t.Fatalf("the prompt %q: %+v %s", task, j, log.String())
		}
		return log.String(), nil
	}
	if _, err := prompt(mia, "with the owner's key?"); err == nil || !strings.Contains(err.Error(), "needs the secret(s) MODEL_KEY") {
		t.Fatalf("a member's prompt in the owner's box, the member having no key: %v", err)
	}
	if err := mia.SetSecret(ctx, "MODEL_KEY", []byte(miaKey), false, brk); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(mia, "with mine"); err != nil {
		t.Fatal(err)
	}
	if seen := seenKeys(t); seen[len(seen)-1] != digest(miaKey) {
		t.Fatal("the member's prompt did not reach the API with the member's key")
	}
	if _, err := prompt(c, "with the owner's"); err != nil {
		t.Fatal(err)
	}
	if seen := seenKeys(t); seen[len(seen)-1] != digest(ownerKey) {
		t.Fatal("the owner's prompt did not reach the API with the owner's key")
	}
	// The owner's stand-in is the box's; the member's never is.
	if out, _ := sh(c, "team", `printf %s "$MODEL_KEY"`); !strings.HasPrefix(out, "pdk-MODEL_KEY-") || strings.Contains(out, "-u") {
		t.Fatalf("the box's own stand-in: %q", out)
	}
	var uses []api.BrokerUse
	waitFor(t, 30*time.Second, "the member's spend on the box's counts", func() bool {
		b, err := c.Box(ctx, "team")
		uses = b.Broker
		return err == nil && slices.ContainsFunc(uses, func(u api.BrokerUse) bool { return u.Secret == "MODEL_KEY@mia" && u.Requests == 1 })
	})
	if !slices.ContainsFunc(uses, func(u api.BrokerUse) bool { return u.Secret == "MODEL_KEY" && u.Requests == 1 }) {
		t.Fatalf("the box's counts: %+v", uses)
	}
}
