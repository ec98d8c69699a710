package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/nftables"

	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/testbed/harness"
)

func fatal(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// nftFile is the text form of a ruleset as one atomic nft transaction that
// replaces the table, as Queue does.
func nftFile(dir string, rs policies.Ruleset) string {
	p := filepath.Join(dir, "ruleset.nft")
	text := fmt.Sprintf("table inet %s {}\ndelete table inet %s\n%s", rs.Table, rs.Table, rs.String())
	fatal(os.WriteFile(p, []byte(text), 0o644))
	return p
}

// benchPolicies measures applying a policy change with many boxes (in a
// throwaway namespace and end to end through paddockd) beside nft -f of the
// same ruleset, and the throughput of an allow-all box with and without
// Paddock's table.
func benchPolicies(r *runner, d *harness.Daemon, work string, n, count int) []row {
	var rows []row

	// 1. The firewall alone, in a namespace of its own.
	ns := "pdk-bench-nft"
	exec.Command("ip", "netns", "del", ns).Run()
	fatal(exec.Command("ip", "netns", "add", ns).Run())
	defer exec.Command("ip", "netns", "del", ns).Run()
	f, err := os.Open("/run/netns/" + ns)
	fatal(err)
	defer f.Close()
	net, _ := policies.NetworkFor("pdkbench", "10.215.0.0/16")
	var boxes []policies.Box
	ip := net.Gateway
	for i := 0; i < count; i++ {
		ip = ip.Next()
		mode := []string{policies.AllowAll, policies.DenyAll, policies.List}[i%3]
		b := policies.Box{Name: fmt.Sprintf("b%03d", i), IP: ip, Policy: policies.Policy{Mode: mode}}
		if mode == policies.List {
			b.Policy.Domains = []string{"allowed.test"}
			b.Policy.CIDRs = []netip.Prefix{netip.MustParsePrefix("198.18.3.0/24")}
		}
		boxes = append(boxes, b)
	}
	m := policies.NewManager(net, func() (*nftables.Conn, error) { return policies.Dial(nftables.WithNetNSFd(int(f.Fd()))) })
	fatal(m.Sync(boxes))
	toggle := func(i int) {
		if i%2 == 0 {
			boxes[0].Policy.Mode = policies.DenyAll
		} else {
			boxes[0].Policy.Mode = policies.AllowAll
		}
	}
	p := timeIt(n*2, func(i int) { toggle(i) }, func(int) { fatal(m.Sync(boxes)) }, nil)
	file := nftFile(work, policies.Compile(net, boxes))
	raw := timeIt(n*2, nil, func(int) { r.run("ip", "netns", "exec", ns, "nft", "-f", file) }, nil)
	rows = append(rows, row{fmt.Sprintf("policy change, %d boxes (table only)", count), p, raw})

	// 2. End to end: paddock policy set with that many real boxes, beside
	// nft -f of the daemon's ruleset into a table of its own.
	fmt.Fprintf(os.Stderr, "bench: making %d boxes\n", count)
	for i := 0; i < count; i++ {
		r.paddock("new", "--name", fmt.Sprintf("p%03d", i), "--policy", []string{"allow-all", "deny-all"}[i%2])
	}
	p = timeIt(n*2, nil, func(i int) {
		r.paddock("policy", "set", "p000", []string{"deny-all", "allow-all"}[i%2])
	}, nil)
	out := r.run("nft", "list", "table", "inet", d.Instance)
	text := strings.Replace(out, "table inet "+d.Instance, "table inet pdkbench-raw", 1)
	rawFile := filepath.Join(work, "raw.nft")
	fatal(os.WriteFile(rawFile, []byte("table inet pdkbench-raw {}\ndelete table inet pdkbench-raw\n"+text), 0o644))
	raw = timeIt(n*2, nil, func(int) { r.run("nft", "-f", rawFile) }, nil)
	exec.Command("nft", "delete", "table", "inet", "pdkbench-raw").Run()
	rows = append(rows, row{fmt.Sprintf("paddock policy set, %d boxes", count), p, raw})
	for i := 0; i < count; i++ {
		r.paddock("rm", "--force", fmt.Sprintf("p%03d", i))
	}

	// 3. Throughput of an allow-all box to the testbed internet, with the
	// table and with no Paddock table at all.
	stop, err := harness.StartInternet()
	fatal(err)
	defer stop()
	r.paddock("new", "--name", "tput")
	c := d.Instance + "-tput"
	speed := func() float64 {
		out := r.docker("exec", c, "curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", "http://"+harness.InetWeb+"/bytes?n=1000000000")
		v, err := strconv.ParseFloat(strings.TrimSpace(out), 64)
		fatal(err)
		return v
	}
	var with, without []float64
	for i := 0; i < 3; i++ {
		with = append(with, speed())
	}
	fatal(d.Stop())
	r.run("nft", "delete", "table", "inet", d.Instance)
	for i := 0; i < 3; i++ {
		without = append(without, speed())
	}
	// Started again with the test internet's resolver and the fake
	// model API's authority, for the broker's rows.
	d.Env = append(d.Env, "PADDOCK_DNS_UPSTREAM="+harness.InetDNS, "PADDOCK_BROKER_CA_FILE="+harness.InetCA())
	fatal(d.Start())
	mw, mo := median(with), median(without)
	fmt.Printf("throughput of an allow-all box (1 GB over HTTP, median of 3): with the table %.0f MB/s, without %.0f MB/s, ratio %.2f\n\n",
		mw/1e6, mo/1e6, mo/mw)
	// The time to move 1 GB, as a row (paddock: with the table).
	rows = append(rows, row{"1 GB download from an allow-all box", one(time.Duration(1e9 / mw * float64(time.Second))), one(time.Duration(1e9 / mo * float64(time.Second)))})
	return append(rows, brokerRows(r, c, n*4)...)
}

// brokerRows time a model API request from a box through the credential
// broker (plain HTTP to the gateway, the broker's HTTPS upstream) beside
// the same request straight to the fake API over HTTPS: each with a new
// connection (a curl each), and n on one connection (one curl).
func brokerRows(r *runner, container string, n int) []row {
	key := "sk-bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command(r.bins.Paddock, "secret", "set", "BENCH_KEY", "--broker", "api.model.test", "--header", "x-api-key")
	cmd.Env, cmd.Stdin = append(os.Environ(), r.env...), strings.NewReader(key)
	if out, err := cmd.CombinedOutput(); err != nil {
		fatal(fmt.Errorf("secret set: %v: %s", err, out))
	}
	r.docker("cp", harness.InetCA(), container+":/tmp/model-ca.pem")
	// The URL and headers of each way, as shell words run in the box.
	through := [2]string{`"$PADDOCK_BROKER/api.model.test/v1/messages"`, `-H "x-api-key: $BENCH_KEY"`}
	straight := [2]string{`https://api.model.test/v1/messages`,
		`--cacert /tmp/model-ca.pem --resolve api.model.test:443:` + harness.InetModelAPI + ` -H "x-api-key: ` + key + `"`}
	times := func(script string) sample {
		out := r.paddock("exec", "tput", "--", "sh", "-c", script)
		var ds []time.Duration
		for _, f := range strings.Fields(out) {
			v, err := strconv.ParseFloat(f, 64)
			fatal(err)
			ds = append(ds, time.Duration(v*float64(time.Second)))
		}
		if len(ds) != n {
			fatal(fmt.Errorf("%d times from %q: %s", len(ds), script, out))
		}
		sort.Slice(ds, func(a, b int) bool { return ds[a] < ds[b] })
		return sample{P50: ds[len(ds)/2], P95: ds[min(len(ds)-1, len(ds)*95/100)], N: len(ds)}
	}
	// A curl per request: a new connection each (and, straight, a TLS
	// handshake each).
	each := func(way [2]string) string {
		return fmt.Sprintf(`for i in $(seq %d); do curl -sS -o /dev/null -w '%%{time_total}\n' -d '{"q":"hi"}' %s %s; done`, n, way[1], way[0])
	}
	// One curl with the URL n times: one connection, kept alive.
	kept := func(way [2]string) string {
		return fmt.Sprintf(`u=%s; curl -sS -w '%%{time_total}\n' -d '{"q":"hi"}' %s $(for i in $(seq %d); do printf -- '-o /dev/null %%s ' "$u"; done)`, way[0], way[1], n)
	}
	return []row{
		{"model API request through the broker, new connection each", times(each(through)), times(each(straight))},
		{"model API request through the broker, one connection", times(kept(through)), times(kept(straight))},
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
