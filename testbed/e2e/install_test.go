package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/version"
	"github.com/paddock-dev/paddock/testbed/forms"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// server is a Debian machine with systemd as PID 1, in a container: the
// stand-in for a fresh VPS (see TESTBED.md).
type server struct {
	t    *testing.T
	name string
	ip   string
}

func (s *server) sh(script string) (string, error) {
	out, err := exec.Command("docker", "exec", s.name, "sh", "-c", script).CombinedOutput()
	return string(out), err
}

func (s *server) must(script string) string {
	s.t.Helper()
	out, err := s.sh(script)
	if err != nil {
		s.t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return out
}

// untouched checks that a failed preflight changed nothing.
func (s *server) untouched(when string) {
	s.t.Helper()
	if out, _ := s.sh("ls -d /usr/local/bin/paddock* /etc/paddock /etc/systemd/system/paddockd.service /var/lib/paddock 2>/dev/null; command -v docker"); strings.TrimSpace(out) != "" {
		s.t.Fatalf("%s changed the system: %s", when, out)
	}
}

func imageTag(t *testing.T, which string) string {
	root, _ := harness.Root()
	out, err := exec.Command("bash", filepath.Join(root, "testbed", "images.sh"), which).Output()
	if err != nil {
		t.Fatalf("images.sh %s: %v", which, err)
	}
	return strings.TrimSpace(string(out))
}

// offlineDir lays out the binaries as a release does, with SHA256SUMS.
func offlineDir(t *testing.T) string {
	dir := t.TempDir()
	root, _ := harness.Root()
	var sums strings.Builder
	for name, src := range map[string]string{"paddock-linux-" + goruntime.GOARCH: bins.Paddock, "paddockd-linux-" + goruntime.GOARCH: bins.Paddockd,
		"install.sh": filepath.Join(root, "install", "install.sh")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), name)
	}
	// The SDKs' packages, as a release carries them (what is in them is
	// the SDK tests' business; here, that they are put where /sdk/
	// serves them, checked against their sums).
	for name, body := range sdkPackages {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256([]byte(body))
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), name)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sdkPackages stand for the SDK packages of a release in offlineDir.
var sdkPackages = map[string]string{
	"paddock-dev-sdk-" + version.Release + ".tgz":          "the TypeScript package",
	"paddock_sdk-" + version.Release + "-py3-none-any.whl": "the Python wheel",
}

// TestInstall runs install/install.sh on a fresh Debian server with
// systemd, offline, with runc: the preflight refusals, the install, the
// setup link, HTTPS from Caddy's internal CA, a browser-approved CLI login
// and a token login from outside, new and exec through HTTPS, a second
// run that changes nothing, and the uninstall.
func TestInstall(t *testing.T) {
	serverImage, mini := imageTag(t, "server"), imageTag(t, "mini")
	off := offlineDir(t)
	name := "pdkt-inst-" + fmt.Sprint(time.Now().UnixNano()%1e6)
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "exec", name, "journalctl", "-u", "paddockd", "--no-pager", "-n", "80").CombinedOutput()
			t.Logf("paddockd journal:\n%s", out)
		}
		exec.Command("docker", "rm", "-f", "-v", name).Run()
		exec.Command("docker", "volume", "rm", name).Run()
	})
	s := startServer(t, serverImage, off, name, "paddock.test")

	// Preflight refusals, each leaving the system as it was. Name lookups
	// stay on the machine meanwhile (no resolver).
	s.must("cp /etc/resolv.conf /root/resolv.conf.keep && echo 'nameserver 127.0.0.1' >/etc/resolv.conf")
	env := "PADDOCK_OFFLINE=/opt/offline PADDOCK_RUNTIME=runc PADDOCK_TLS=internal PADDOCK_IMAGE=" + mini + " "
	install := env + "PADDOCK_HOSTNAME=paddock.test sh /opt/offline/install.sh"
	refuse := func(what, script, want string) {
		t.Helper()
		out, err := s.sh(script)
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("%s: want a refusal with %q, got %v:\n%s", what, want, err, out)
		}
		s.untouched(what)
	}
	refuse("not root", "su nobody -s /bin/sh -c '"+install+"'", "run the installer as root")
	s.must("cp /etc/os-release /root/os-release.keep && printf 'ID=fedora\\nVERSION_ID=40\\n' >/etc/os-release")
	refuse("wrong distribution", install, "this is fedora 40; Paddock runs on Ubuntu 22.04/24.04 and Debian 12/13")
	s.must("cp /root/os-release.keep /etc/os-release")
	s.must("(nc -l -p 443 >/dev/null 2>&1 &) ; sleep 0.5")
	refuse("port 443 held", install, "port 443 is in use by nc")
	s.must("pkill -x nc || true; sleep 0.3")
	s.must("(nc -l -p 2222 >/dev/null 2>&1 &) ; sleep 0.5")
	refuse("SSH port held", install, "port 2222 is in use by nc: Paddock's SSH gateway listens there")
	s.must("pkill -x nc || true; sleep 0.3")
	refuse("host name that does not resolve", env+"PADDOCK_HOSTNAME=nosuch.test sh /opt/offline/install.sh",
		"does not resolve; point its DNS at this server, or use "+strings.ReplaceAll(s.ip, ".", "-")+".sslip.io")
	s.must("echo '198.18.0.10 elsewhere.test' >>/etc/hosts")
	refuse("host name of another machine", env+"PADDOCK_HOSTNAME=elsewhere.test sh /opt/offline/install.sh", "resolves to 198.18.0.10, which is not this server")
	refuse("32-bit machine", "setarch linux32 sh -c '"+install+"'", "; Paddock runs on amd64 and arm64")
	s.must("awk '/^MemTotal:/ {print \"MemTotal: 1048576 kB\"; next} {print}' /proc/meminfo >/root/meminfo.small && mount --bind /root/meminfo.small /proc/meminfo")
	refuse("1 GB of memory", install, "this server has 1024 MB of memory; Paddock needs at least 2 GB")
	s.must("umount /proc/meminfo")
	s.must("mkdir -p /root/varlib && mount --bind /var/lib /root/varlib && mount -t tmpfs -o size=64m tmpfs /var/lib")
	refuse("64 MB of disk", install, "/var/lib has 64 MB free; Paddock needs at least 10 GB")
	s.must("umount /var/lib && umount /root/varlib")
	// Sysbox's needs of the kernel are checked before anything changes.
	sysbox := "PADDOCK_OFFLINE=/opt/offline PADDOCK_TLS=internal PADDOCK_HOSTNAME=paddock.test sh /opt/offline/install.sh"
	s.must("echo 0 >/root/userns.off && mount --bind /root/userns.off /proc/sys/user/max_user_namespaces")
	refuse("user namespaces off (Sysbox)", sysbox, "Sysbox needs user namespaces, and they are off")
	s.must("umount /proc/sys/user/max_user_namespaces")
	refuse("no Sysbox package offline", sysbox, "offline mode with sysbox: /opt/offline/sysbox-ce_0.6.5-0.linux_"+goruntime.GOARCH+".deb is missing")
	refuse("bad runtime", "PADDOCK_OFFLINE=/opt/offline PADDOCK_RUNTIME=crun PADDOCK_HOSTNAME=paddock.test sh /opt/offline/install.sh", "use sysbox-runc or runc")
	// A server for another's Paddock: what the join needs is checked
	// before anything changes (the join itself is TestCluster's).
	nodeInstall := env + "sh /opt/offline/install.sh --join 10.214.255.1:7444 --token pdkjoin_x"
	refuse("--join without the fingerprint", nodeInstall, "--join needs --ca-sha256 (from 'paddock node add')")
	refuse("--join with a short fingerprint", nodeInstall+" --ca-sha256 abc", "--ca-sha256 abc: give the 64 hex digits")
	refuse("--join without a port", env+"sh /opt/offline/install.sh --join 10.214.255.1 --token t --ca-sha256 "+strings.Repeat("a", 64), "give the control plane's IP:PORT")
	s.must("cp /root/resolv.conf.keep /etc/resolv.conf")

	// A route of the server's over part of the box network (the default
	// subnet, 10.213.0.0/16), as a VPN's: the install goes as far as
	// starting paddockd, which does not start, and it shows why from the
	// journal. Once the route is gone, the same command again starts it.
	s.must("ip link add pdkvpn0 type veth peer name pdkvpn1 && ip link set pdkvpn0 up && ip route add 10.213.7.0/24 dev pdkvpn0")
	if out, err := s.sh(install); err == nil || !strings.Contains(out, "paddockd.service did not start; the end of its log") ||
		!strings.Contains(out, "the box network 10.213.0.0/16 overlaps routes of this machine") || !strings.Contains(out, `goes by "10.213.7.0/24 dev pdkvpn0"`) {
		t.Fatalf("install beside a route over the box network: %v\n%s", err, out)
	}
	s.must("ip link del pdkvpn0")

	// The install.
	out := s.must(install)
	link := regexp.MustCompile(`https://paddock\.test/setup/(pdk_[0-9a-f]{64})`).FindStringSubmatch(out)
	if link == nil || !strings.Contains(out, "WARNING: runtime runc") {
		t.Fatalf("install output:\n%s", out)
	}
	if st := strings.TrimSpace(s.must("systemctl is-active paddockd")); st != "active" {
		t.Fatalf("paddockd is %s", st)
	}
	// The box image moves into the server's engine, as a registry would.
	save := exec.Command("sh", "-c", "docker save "+mini+" | docker exec -i "+name+" docker load")
	if b, err := save.CombinedOutput(); err != nil {
		t.Fatalf("moving the image in: %v\n%s", err, b)
	}

	root, err := exec.Command("docker", "exec", name, "cat", "/var/lib/paddock/caddy/pki/authorities/local/root.crt").Output()
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "root.crt")
	os.WriteFile(caFile, root, 0o644)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(root)
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, _ := net.SplitHostPort(addr)
		return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(s.ip, port))
	}
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://paddock.test"
	post := func(path string, v url.Values) (int, string) { return forms.Post(t, b, base, path, v) }

	// HTTP redirects to HTTPS; HTTPS is Caddy's, with the internal CA.
	nr := &http.Client{Transport: &http.Transport{DialContext: dial}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := nr.Get("http://paddock.test/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 308 || resp.Header.Get("Location") != base+"/login" {
		t.Fatalf("http: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}

	// The server serves the CLI the installer put in place, with its
	// checksum and an installer that names this server.
	if code, sums := forms.Get(t, b, base+"/cli/SHA256SUMS"); code != 200 || !strings.Contains(sums, "paddock-linux-"+goruntime.GOARCH) {
		t.Fatalf("/cli/SHA256SUMS: %d %s", code, sums)
	}
	if code, sh := forms.Get(t, b, base+"/cli/install.sh"); code != 200 || !strings.Contains(sh, "url='https://paddock.test'") {
		t.Fatalf("/cli/install.sh: %d %.300s", code, sh)
	}
	// And the SDKs of its release, at /sdk/, with how to install them.
	for name, body := range sdkPackages {
		if code, got := forms.Get(t, b, base+"/sdk/"+name); code != 200 || got != body {
			t.Fatalf("/sdk/%s: %d %q", name, code, got)
		}
		if _, page := forms.Get(t, b, base+"/sdk/"); !strings.Contains(page, "install "+base+"/sdk/"+name) {
			t.Fatalf("/sdk/ does not say how to install %s:\n%s", name, page)
		}
	}

	// The setup link makes the owner once.
	form := url.Values{"name": {"olga"}, "password": {"a long password"}, "password2": {"a long password"}}
	if code, body := post("/setup/"+link[1], form); code != 201 || !strings.Contains(body, "paddock login https://paddock.test") {
		t.Fatalf("setup: %d %s", code, body)
	}
	form.Set("name", "eve")
	if code, _ := post("/setup/"+link[1], form); code != http.StatusGone {
		t.Fatalf("second use of the setup link: %d", code)
	}

	// The CLI logs in from outside: the browser approves its code.
	proxy, stopProxy, err := harness.ConnectProxy(s.ip)
	if err != nil {
		t.Fatal(err)
	}
	defer stopProxy()
	cliEnv := append(os.Environ(), "HTTPS_PROXY="+proxy, "NO_PROXY=", "PADDOCK_CONFIG_DIR="+filepath.Join(t.TempDir(), "cli"), "PADDOCK_HOST=", "PADDOCK_TOKEN=")
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bins.Paddock, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	login := exec.Command(bins.Paddock, "login", base, "--ca-cert", caFile, "--no-open")
	login.Env = cliEnv
	stdout, _ := login.StdoutPipe()
	login.Stderr = login.Stdout
	if err := login.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var verify, userCode string
	for sc.Scan() {
		if m := regexp.MustCompile(`https://paddock\.test/device$`).FindString(strings.TrimSpace(sc.Text())); m != "" {
			verify = m
		}
		if m := regexp.MustCompile(`enter the code ([A-Z0-9]{4}-[A-Z0-9]{4})`).FindStringSubmatch(sc.Text()); m != nil {
			userCode = m[1]
			break
		}
	}
	if verify == "" || userCode == "" {
		login.Process.Kill()
		t.Fatal("the CLI printed no verification URL and code")
	}
	approveDevice(t, b, base, verify, userCode)
	rest, _ := io.ReadAll(stdout)
	if err := login.Wait(); err != nil || !strings.Contains(string(rest), "Logged in to https://paddock.test") {
		t.Fatalf("login: %v %s", err, rest)
	}
	if out, err := cli(cliEnv, "whoami"); err != nil || !strings.Contains(out, "olga (owner)") {
		t.Fatalf("whoami: %v %s", err, out)
	}

	// A token for automation logs in headless, elsewhere.
	tok, err := cli(cliEnv, "token", "create", "ci")
	if err != nil {
		t.Fatalf("token create: %v %s", err, tok)
	}
	ciEnv := append(os.Environ(), "HTTPS_PROXY="+proxy, "NO_PROXY=", "PADDOCK_CONFIG_DIR="+filepath.Join(t.TempDir(), "ci"), "PADDOCK_HOST=", "PADDOCK_TOKEN=")
	if out, err := cli(ciEnv, "login", base, "--token", strings.TrimSpace(tok), "--ca-cert", caFile); err != nil {
		t.Fatalf("login --token: %v %s", err, out)
	}
	// Boxes through HTTPS: new, then exec (an HTTP upgrade through Caddy).
	// The front door's configuration names no box, so a box made or
	// removed does not reload it (a reload closes kept-alive connections
	// under clients' requests): Caddy logs each load it makes.
	loads := func() string {
		return strings.TrimSpace(s.must("journalctl -u paddockd --no-pager -o cat | grep -c 'admin endpoint disabled' || true"))
	}
	loadsBefore := loads()
	if out, err := cli(ciEnv, "new", "--name", "b1"); err != nil {
		t.Fatalf("new: %v %s", err, out)
	}
	if out, err := cli(ciEnv, "exec", "b1", "--", "sh", "-c", "echo hello from $(id -un); exit 3"); !strings.Contains(out, "hello from paddock") || exitCode(err) != 3 {
		t.Fatalf("exec: %v %s", err, out)
	}

	// E2B's SDK through the front door, over HTTPS, with the settings
	// 'paddock e2b env' prints for this server: a sandbox made, a
	// command and a file through envd, the sandbox killed. (The SDK's own
	// proxy option reaches the server's address, as DNS would.)
	envOut, err := cli(ciEnv, "e2b", "env")
	if err != nil {
		t.Fatalf("paddock e2b env: %v %s", err, envOut)
	}
	e2bEnv := append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile, "E2B_TEST_PROXY="+proxy, "E2B_DOMAIN=", "E2B_DEBUG=")
	for _, m := range regexp.MustCompile(`(?m)^export (E2B_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(envOut, -1) {
		e2bEnv = append(e2bEnv, m[1]+"="+m[2])
	}
	if !strings.Contains(envOut, "export E2B_API_URL="+base+"/e2b\n") || !strings.Contains(envOut, "export E2B_SANDBOX_URL="+base+"/e2b/envd\n") {
		t.Fatalf("paddock e2b env printed:\n%s", envOut)
	}
	node, e2bDir := e2bSDKs(t)
	e2bRun := exec.Command(node, "--input-type=module", "-e", `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create({ proxy: process.env.E2B_TEST_PROXY, timeoutMs: 300_000 })
const r = await sbx.commands.run('echo over https as $(whoami)')
await sbx.files.write('/home/user/door.txt', 'through the front door')
const back = await sbx.files.read('/home/user/door.txt')
await sbx.kill()
console.log(JSON.stringify({ out: r.stdout, back, gone: !(await Sandbox.list({ proxy: process.env.E2B_TEST_PROXY }).nextItems()).some((x) => x.sandboxId === sbx.sandboxId) }))
`)
	e2bRun.Dir, e2bRun.Env = e2bDir, e2bEnv
	if out, err := e2bRun.CombinedOutput(); err != nil || !strings.Contains(string(out), `{"out":"over https as paddock\n","back":"through the front door","gone":true}`) {
		t.Fatalf("E2B's SDK through the front door: %v\n%s", err, out)
	}
	// E2B's own form, E2B_DOMAIN alone: the control API at api.HOST, the
	// sandbox's envd at 49983-ID.HOST, each with a certificate made on
	// demand. (The URLs the SDK would take over the domain are unset.)
	domOut, err := cli(ciEnv, "e2b", "env", "--domain", "--name", "e2b-domain")
	if err != nil || !strings.Contains(domOut, "unset E2B_API_URL E2B_SANDBOX_URL\nexport E2B_DOMAIN=paddock.test\n") {
		t.Fatalf("paddock e2b env --domain: %v\n%s", err, domOut)
	}
	domEnv := append(os.Environ(), "NODE_EXTRA_CA_CERTS="+caFile, "E2B_TEST_PROXY="+proxy, "E2B_API_URL=", "E2B_SANDBOX_URL=", "E2B_DEBUG=")
	for _, m := range regexp.MustCompile(`(?m)^export (E2B_[A-Z_]+)=(\S+)$`).FindAllStringSubmatch(domOut, -1) {
		domEnv = append(domEnv, m[1]+"="+m[2])
	}
	e2bRun = exec.Command(node, "--input-type=module", "-e", `
import { Sandbox } from 'e2b'
const sbx = await Sandbox.create({ proxy: process.env.E2B_TEST_PROXY, timeoutMs: 300_000 })
const r = await sbx.commands.run('echo at 49983-' + sbx.sandboxId)
await sbx.files.write('/home/user/door.txt', 'by its own name')
const back = await sbx.files.read('/home/user/door.txt')
await sbx.kill()
console.log(JSON.stringify({ out: r.stdout === 'at 49983-' + sbx.sandboxId + '\n', back, domain: sbx.sandboxDomain }))
`)
	e2bRun.Dir, e2bRun.Env = e2bDir, domEnv
	if out, err := e2bRun.CombinedOutput(); err != nil || !strings.Contains(string(out), `{"out":true,"back":"by its own name","domain":"paddock.test"}`) {
		t.Fatalf("E2B's SDK with E2B_DOMAIN: %v\n%s", err, out)
	}

	// A preview URL reaches a port inside the box through Caddy, with a
	// certificate made on demand: for the token's user, and for the owner's
	// browser session (through /preview and a ticket).
	if out, err := cli(ciEnv, "exec", "--detach", "b1", "--", "sh", "-c",
		"mkdir -p /config/www && echo preview-ok >/config/www/index.html && exec busybox httpd -f -p 8080 -h /config/www"); err != nil {
		t.Fatalf("starting a web server in the box: %v %s", err, out)
	}
	previewURL := "https://8080-b1.paddock.test/index.html"
	var body string
	for i := 0; ; i++ {
		req, _ := http.NewRequest("GET", previewURL, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok))
		resp, err := b.Do(req)
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(raw)
			if resp.StatusCode == 200 {
				break
			}
		}
		if i == 50 {
			t.Fatalf("preview with a token: %v %s", err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.TrimSpace(body) != "preview-ok" {
		t.Fatalf("preview body %q", body)
	}
	req, _ := http.NewRequest("GET", previewURL, nil)
	req.Header.Set("Accept", "text/html")
	resp, err = b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(raw)) != "preview-ok" || resp.Request.URL.Host != "8080-b1.paddock.test" {
		t.Fatalf("preview in the owner's browser: %d at %s: %s", resp.StatusCode, resp.Request.URL, raw)
	}
	if _, err := b.Get("https://8080-nosuch.paddock.test/"); err == nil {
		t.Fatal("a certificate for the preview of a box that does not exist")
	}
	if n := loads(); n != loadsBefore || n == "0" {
		t.Errorf("the front door's configuration was loaded %s times before the box was made, %s times after", loadsBefore, n)
	}

	// A second run changes nothing: no restart, no new link.
	pid := s.must("systemctl show -p MainPID --value paddockd")
	out = s.must(install)
	for _, want := range []string{"docker: already running", "paddock: current", "paddockd: current", "config: kept", "unit: unchanged", "the owner account exists"} {
		if !strings.Contains(out, want) {
			t.Errorf("second run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/setup/") {
		t.Errorf("second run printed a setup link:\n%s", out)
	}
	if again := s.must("systemctl show -p MainPID --value paddockd"); again != pid {
		t.Errorf("the second run restarted paddockd (pid %s, then %s)", strings.TrimSpace(pid), strings.TrimSpace(again))
	}

	// A second server joins through the installer, under systemd: the
	// control plane listens for its servers, 'paddock node add' gives the
	// command, and install.sh --join on a fresh server installs the engine,
	// joins the swarm and starts paddock-node.service (not paddockd); a box
	// runs there; 'node rm' makes it leave, and systemd does not start its
	// agent again.
	s.must(fmt.Sprintf("echo 'cluster_listen = \"%s:7444\"' >>/etc/paddock/paddock.toml && systemctl restart paddockd", s.ip))
	waitFor(t, time.Minute, "paddockd to answer after its restart", func() bool {
		_, err := cli(ciEnv, "whoami")
		return err == nil
	})
	out, err = cli(ciEnv, "node", "add", "--json")
	var j api.NodeJoin
	if err != nil || json.Unmarshal([]byte(out), &j) != nil {
		t.Fatalf("node add: %v\n%s", err, out)
	}
	addr := regexp.MustCompile(`--join (\S+)`).FindStringSubmatch(j.Command)
	if addr == nil {
		t.Fatalf("node add's command: %q", j.Command)
	}
	nodeName := name + "-n2"
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "exec", nodeName, "journalctl", "-u", "paddock-node", "--no-pager", "-n", "60").CombinedOutput()
			t.Logf("paddock-node journal:\n%s", out)
		}
		exec.Command("docker", "rm", "-f", "-v", nodeName).Run()
		exec.Command("docker", "volume", "rm", nodeName).Run()
	})
	n2 := startServer(t, serverImage, off, nodeName, "n2.test")
	out = n2.must(env + "PADDOCK_NODE_NAME=n2 sh /opt/offline/install.sh --join " + addr[1] + " --token " + j.Token + " --ca-sha256 " + j.CASHA256)
	if st := strings.TrimSpace(n2.must("systemctl is-active paddock-node; test -e /etc/systemd/system/paddockd.service || echo no-paddockd")); st != "active\nno-paddockd" {
		t.Fatalf("after install.sh --join: %q\n%s", st, out)
	}
	if b, err := exec.Command("sh", "-c", "docker save "+mini+" | docker exec -i "+nodeName+" docker load").CombinedOutput(); err != nil {
		t.Fatalf("moving the image into n2: %v\n%s", err, b)
	}
	waitFor(t, time.Minute, "n2 up in paddock nodes", func() bool {
		out, _ := cli(ciEnv, "nodes", "--json")
		var ns []api.Node
		json.Unmarshal([]byte(out), &ns)
		for _, n := range ns {
			if n.Name == "n2" && n.State == "up" && n.SwarmState == "ready" {
				return true
			}
		}
		return false
	})
	if out := s.must("docker node ls --format '{{.Hostname}} {{.Status}}' | sort"); out != "n2.test Ready\npaddock.test Ready\n" {
		t.Fatalf("the swarm's nodes: %q", out)
	}
	if out, err := cli(ciEnv, "new", "--name", "onn2", "--node", "n2"); err != nil {
		t.Fatalf("new on n2: %v %s", err, out)
	}
	if out, err := cli(ciEnv, "exec", "onn2", "--", "hostname"); err != nil || out != "onn2\n" {
		t.Fatalf("exec in the box on n2: %v %q", err, out)
	}
	if out := n2.must("docker ps --filter label=paddock.kind=box --format '{{.Names}}'"); !strings.Contains(out, "onn2") {
		t.Fatalf("the box is not on n2's engine: %q", out)
	}
	if out, err := cli(ciEnv, "rm", "--force", "onn2"); err != nil {
		t.Fatalf("rm onn2: %v %s", err, out)
	}
	if out, err := cli(ciEnv, "node", "rm", "n2"); err != nil {
		t.Fatalf("node rm n2: %v %s", err, out)
	}
	unit := func(prop string) string {
		return strings.TrimSpace(n2.must("systemctl show -p " + prop + " --value paddock-node"))
	}
	waitFor(t, time.Minute, "n2's agent to leave", func() bool {
		st := unit("ActiveState")
		return st != "active" && st != "activating"
	})
	// Ended with 78, and not waiting to be started again (a restart
	// would show as activating/auto-restart).
	if st, sub, code := unit("ActiveState"), unit("SubState"), unit("ExecMainStatus"); sub == "auto-restart" || code != "78" {
		t.Fatalf("n2's agent after node rm: %s/%s, exit %s (want it ended with 78 and not restarted)", st, sub, code)
	}
	if out := n2.must("docker info --format '{{.Swarm.LocalNodeState}}'; ls /var/lib/paddock/node 2>/dev/null || echo no-join"); out != "inactive\nno-join\n" {
		t.Fatalf("n2 after node rm: %q (want out of the swarm, its join forgotten)", out)
	}

	if out, err := cli(ciEnv, "drive", "new", "keep"); err != nil {
		t.Fatalf("drive new: %v %s", err, out)
	}

	// Uninstall: the service and files go, the boxes stop, the state and
	// drives stay; asked twice, they go too.
	out = s.must("sh /opt/offline/install.sh --uninstall")
	if !strings.Contains(out, "kept /var/lib/paddock") {
		t.Fatalf("uninstall:\n%s", out)
	}
	if st, _ := s.sh("systemctl is-active paddockd"); strings.TrimSpace(st) == "active" {
		t.Fatal("paddockd still runs after --uninstall")
	}
	if out, _ := s.sh("ls /usr/local/bin/paddockd /etc/paddock /etc/systemd/system/paddockd.service 2>/dev/null; test -f /var/lib/paddock/paddock.db && echo state-kept"); strings.TrimSpace(out) != "state-kept" {
		t.Fatalf("after uninstall: %s", out)
	}
	if out := s.must("docker ps -q --filter label=paddock.kind=box; docker volume ls -q --filter label=paddock.kind=drive | wc -l; nft list tables | grep paddock || true"); strings.TrimSpace(out) != "1" {
		t.Fatalf("after uninstall, want no running box, one drive, no table: %q", out)
	}
	out = s.must("sh /opt/offline/install.sh --uninstall --uninstall")
	if out, _ := s.sh("ls -d /var/lib/paddock 2>/dev/null; docker volume ls -q --filter label=paddock.instance; docker ps -aq --filter label=paddock.instance"); strings.TrimSpace(out) != "" {
		t.Fatalf("after --uninstall twice: %s", out)
	}
}

// startServer starts a fresh Debian server with systemd (serverImage) as
// a container called name, with the offline files at /opt/offline, and
// waits for systemd.
func startServer(t *testing.T, serverImage, off, name, hostname string) *server {
	t.Helper()
	run := exec.Command("docker", "run", "-d", "--name", name, "--hostname", hostname,
		"--cap-add=ALL", "--cap-drop=SYS_RESOURCE", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run", "--tmpfs", "/run/lock",
		"-v", name+":/var/lib/docker", "-v", off+":/opt/offline:ro", "--label", "paddock.test=install", serverImage, "/sbin/init")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("starting the server: %v\n%s", err, out)
	}
	s := &server{t: t, name: name}
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _ := s.sh("systemctl is-system-running")
		if st := strings.TrimSpace(out); st == "running" || st == "degraded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd did not come up: %s", out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	s.ip = strings.TrimSpace(s.must("hostname -i | awk '{print $1}'"))
	// A nested engine cannot turn IPv6 off on its containers' interfaces
	// (/proc/sys is read-only in this container; on a VPS it is not). Boxes'
	// IPv6 is dropped by Paddock's table either way.
	s.must("mkdir -p /etc/systemd/system/docker.service.d && printf '[Service]\\nEnvironment=DOCKER_ALLOW_IPV6_ON_IPV4_INTERFACE=1\\n' >/etc/systemd/system/docker.service.d/nested.conf")
	return s
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
