package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/paddock-dev/paddock/appliance/access"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/backup"
	"github.com/paddock-dev/paddock/appliance/buckets"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/dashboard"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/driver/cluster"
	"github.com/paddock-dev/paddock/appliance/driver/docker"
	"github.com/paddock-dev/paddock/appliance/e2b"
	"github.com/paddock-dev/paddock/appliance/jobs"
	"github.com/paddock-dev/paddock/appliance/metrics"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/nodes"
	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/appliance/preview"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/secrets"
	"github.com/paddock-dev/paddock/appliance/server"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/shipping"
	"github.com/paddock-dev/paddock/appliance/sshgate"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/install/clients"
	"github.com/paddock-dev/paddock/policies"
	"github.com/paddock-dev/paddock/units"
)

// started is what serve has made so far, stage by stage: the state, the
// engine and the box network, the core (the service over the cluster's
// driver and rules, the reconciler, the capabilities), and what goes when
// serve returns, undone in the reverse order it was made.
type started struct {
	cfg    config.Config
	log    *slog.Logger
	st     *store.Store
	drv    *docker.Driver
	boxNet policies.Network
	fw     *policies.Manager
	rec    *reconcile.Reconciler
	svc    *service.Service
	caps   []route.Capability
	undo   []func()
	// ship ships snapshots to the object store (nil: none configured);
	// shipKick has it look now.
	ship     *shipping.Shipper
	shipKick <-chan struct{}
	// buckets mounts boxes' buckets (nil: they cannot be, here).
	buckets *buckets.Mounter
	// backups writes backup_to's backups (nil: none configured).
	backups *backup.Schedule
	// serving is set once the first reconcile is done.
	serving atomic.Bool
}

// onClose has f run when serve returns.
func (d *started) onClose(f func()) { d.undo = append(d.undo, f) }

// close undoes what was made, newest first.
func (d *started) close() {
	for i := len(d.undo) - 1; i >= 0; i-- {
		d.undo[i]()
	}
}

// checkListen refuses a local mode that would listen beyond loopback.
func checkListen(cfg config.Config) error {
	if cfg.Listen == "" || !cfg.Local {
		return nil
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %q: %w", cfg.Listen, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("local mode serves on loopback only, not %q", cfg.Listen)
	}
	return nil
}

// openState opens the state directory's store and refuses a setting its
// users make unsafe.
func (d *started) openState() error {
	if err := d.cfg.EnsureDirs(); err != nil {
		return err
	}
	st, err := store.Open(d.cfg.StateDir)
	if err != nil {
		return err
	}
	d.st = st
	d.onClose(func() { st.Close() })
	users, err := st.Users()
	if err != nil {
		return err
	}
	return access.CheckUnsafeSetting(d.cfg.UnsafeDockerInRuncBoxes, users)
}

// openEngine connects to the engine and makes the box network's bridge;
// no route of this machine may take its addresses elsewhere (a VPN, a
// private network): paddockd does not start beside one.
func (d *started) openEngine(ctx context.Context) error {
	cfg := d.cfg
	boxNet, err := policies.NetworkFor(cfg.Instance, cfg.Subnet)
	if err != nil {
		return err
	}
	boxNet.BrokerPort = uint16(cfg.BrokerPort)
	d.boxNet = boxNet
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	drv, err := engine(dctx, cfg, boxNet, bucketsDir(cfg))
	if cfg.UnsafeDockerInRuncBoxes {
		d.log.Warn("unsafe_docker_in_runc_boxes is on: root in any box owns this machine (a test setting)")
	}
	cancel()
	if err != nil {
		return err
	}
	d.drv = drv
	d.onClose(func() { drv.Close() })
	d.log.Info("engine connected", "api", drv.APIVersion(), "instance", cfg.Instance, "runtime", cfg.Runtime)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = drv.Prepare(pctx)
	cancel()
	if err == nil {
		err = boxNet.CheckRoutes(policies.SubnetFix)
	}
	return err
}

// buildCore makes the core: the cluster's driver and rules (every call
// goes through them to the box's node: this server's own engine is node
// "", the only one until a server joins), the reconciler, the service,
// and the capabilities, before the first reconcile, so that what they
// keep of a box goes with it from the start.
func (d *started) buildCore(life context.Context) error {
	cfg, st, drv, log := d.cfg, d.st, d.drv, d.log
	d.fw = rulesFor(d.boxNet, log)
	nodes := &cluster.Driver{Nodes: map[string]driver.Driver{"": drv}, Where: func(kind, name string) (string, error) {
		n, err := st.Where(kind, name)
		if errors.Is(err, store.ErrNotFound) {
			return "", driver.ErrNotFound
		}
		return n, err
	}, InTransit: func(node, kind, name string) bool {
		ok, err := st.InTransit(node, kind, name)
		return ok || err != nil
	}, Log: log}
	rules := &cluster.Firewall{NodeOf: func(box string) (string, error) {
		b, err := st.GetBox(box)
		return b.Node, err
	}}
	// This server's address in the cluster is fenced from every box (on a
	// single server the rules already keep boxes off the host).
	var clusterIP netip.Addr
	if ap, err := netip.ParseAddrPort(cfg.ClusterListen); err == nil && !ap.Addr().IsUnspecified() {
		clusterIP = ap.Addr().Unmap()
	}
	rules.SetNode("", d.boxNet.Subnet, clusterIP, d.fw)
	d.rec = &reconcile.Reconciler{Store: st, Driver: nodes, Types: service.Types(cfg), Log: log, Firewall: rules}
	d.mountBuckets()
	bucket, err := d.shipping(life, nodes)
	if err != nil {
		return err
	}
	if err := d.scheduleBackups(bucket); err != nil {
		return err
	}
	sealer, err := auth.LoadSealer(filepath.Join(cfg.StateDir, "secret.key"))
	if err != nil {
		return err
	}
	if d.buckets != nil {
		d.buckets.Keys = func(owner int64, name string) ([]byte, error) {
			row, err := st.SecretFor(owner, name)
			if err != nil {
				return nil, err
			}
			return sealer.Open(row.Name, row.Sealed)
		}
	}
	auditor, err := openAudit(cfg)
	if err != nil {
		return err
	}
	if auditor.Export != nil {
		d.onClose(func() { auditor.Export.Close() })
	}
	host, _ := os.Hostname()
	host = strings.ToLower(strings.SplitN(host, ".", 2)[0])
	boxNet := d.boxNet
	svc := &service.Service{Store: st, Rec: d.rec, Driver: nodes, Cfg: cfg, Log: log, Life: life, Net: boxNet, Firewall: rules, Sealer: sealer, Audit: auditor,
		Cluster: &node.Cluster{Driver: nodes, Firewall: rules, Dir: filepath.Join(cfg.StateDir, "cluster"),
			Name: host, URL: cfg.ClusterListen, Swarm: drv, Log: log,
			Local: func(ctx context.Context) (node.Info, error) { return localInfo(ctx, host, drv, boxNet) }}}
	if svc.SSO, err = sso.New(cfg.SSO); err != nil {
		return err
	}
	if svc.SSO != nil {
		if svc.SSOKey, err = auth.LoadKey(filepath.Join(cfg.StateDir, "sso.key")); err != nil {
			return err
		}
	}
	d.svc = svc
	d.rec.Forget = svc.ForgetBox
	d.caps = server.Capabilities(svc)
	d.rec.Yield = svc.Fore.Busy
	d.rec.Restoring = svc.DriveRestoring
	return nil
}

// shipping sets up the shipping of snapshots to the object store, when
// one is configured. A store that does not answer now does not stop
// paddockd: the shipping says so, and tries again.
func (d *started) shipping(ctx context.Context, nodes *cluster.Driver) (*objstore.Store, error) {
	if !d.cfg.ObjectStore.Enabled() {
		return nil, nil
	}
	bucket, err := objstore.Open(d.cfg.ObjectStore, d.cfg.Instance)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := bucket.Check(cctx); err != nil {
		d.log.Warn("the object store does not answer now: snapshots are shipped once it does", "err", err)
	}
	st := d.st
	d.ship = &shipping.Shipper{Store: st, Engines: nodes, Bucket: bucket, Log: d.log}
	kick, kickFn := kicker()
	d.shipKick = kick
	d.rec.Taken = func(string) { kickFn() }
	d.rec.Fetch = func(fctx context.Context, snapshot, box string) error {
		node := ""
		if b, err := st.GetBox(box); err == nil {
			node = b.Node
		}
		if !d.serving.Load() {
			// The first reconcile, before paddockd says it is ready:
			// a fetch goes on in the background, and the box is made
			// by the pass that follows it.
			return d.ship.Begin(ctx, snapshot, node, func() { d.rec.Run(ctx) })
		}
		return d.ship.Fetch(fctx, snapshot, node)
	}
	return bucket, nil
}

// scheduleBackups sets up backup_to: the server's own state, encrypted,
// to the object store (bucket) or a folder, every backup_every (run by
// loops).
func (d *started) scheduleBackups(bucket *objstore.Store) error {
	cfg := d.cfg
	if cfg.BackupTo == "" {
		return nil
	}
	key, err := backupKey(cfg.BackupPassphraseFile, cfg.BackupRecipients, "", "")
	if err != nil {
		return fmt.Errorf("backup_to: %w", err)
	}
	var place backup.Place = backup.Folder(cfg.BackupTo)
	if cfg.BackupTo == "object_store" {
		place = backup.Bucket{Store: bucket}
	}
	d.backups = &backup.Schedule{Place: place, Key: key, Store: d.st, StateDir: cfg.StateDir, ConfigPath: cfg.File, Keep: cfg.BackupKeep, Log: d.log}
	return nil
}

// takeUp picks up what the last run left: its jobs' processes, the
// nodes, addresses for boxes made before they had fixed ones.
func (d *started) takeUp(ctx context.Context) error {
	if err := d.svc.AttachAll(); err != nil {
		return err
	}
	d.svc.LookAtNodes(ctx)
	// Jobs that ran when paddockd last stopped lost their output stream
	// with it.
	if jb, ok := capability[*jobs.Jobs](d.caps); ok {
		if err := jb.MarkLost(); err != nil {
			return err
		}
	}
	return d.svc.AssignMissingIPs()
}

// catchUp makes the engine match the state once, before anything is
// served, and finishes what the last stop cut off.
func (d *started) catchUp(ctx context.Context) error {
	res, err := d.rec.Run(ctx)
	if err != nil {
		return fmt.Errorf("first reconcile: %w", err)
	}
	if e := res.Err(); e != nil {
		d.log.Warn("first reconcile left errors", "err", e)
	}
	// The capabilities finish their own, before anything new is asked:
	// moves between servers are finished or undone, image builds leave
	// no builder box, image or context.
	for _, c := range d.caps {
		if r, ok := c.(route.Recovering); ok {
			r.Recover(ctx)
		}
	}
	// A box claimed just before the last stop may still have a pool
	// box's CPU share.
	go d.svc.ForegroundClaimed(ctx)
	d.serving.Store(true)
	return nil
}

// startSideServers starts the boxes' resolver, the credential broker,
// the joins of other servers and the SSH gateway; it returns the
// gateway's port and host key ("" without one).
func (d *started) startSideServers(ctx context.Context) (sshPort int, sshHostKey string, err error) {
	cfg, svc, log := d.cfg, d.svc, d.log
	resolver, err := startResolver(cfg, d.fw, d.boxNet, log)
	if err != nil {
		return 0, "", err
	}
	d.onClose(func() { resolver.Shutdown() })
	sec, _ := capability[*secrets.Secrets](d.caps)
	stopBroker, err := startBroker(cfg, svc, sec, d.boxNet, log)
	if err != nil {
		return 0, "", err
	}
	d.onClose(stopBroker)
	if cfg.ClusterListen != "" {
		servers, _ := capability[*nodes.Nodes](d.caps)
		stopJoins, err := serveJoins(ctx, cfg.ClusterListen, svc.Cluster, servers.Join, log)
		if err != nil {
			return 0, "", err
		}
		d.onClose(stopJoins)
	}
	if cfg.SSHListen == "" {
		return 0, "", nil
	}
	key, err := sshgate.HostKey(filepath.Join(cfg.StateDir, "ssh_host_ed25519_key"))
	if err != nil {
		return 0, "", err
	}
	gw := &sshgate.Gateway{Svc: svc, Store: d.st, Log: log}
	if err := gw.Listen(cfg.SSHListen, key); err != nil {
		return 0, "", err
	}
	d.onClose(func() { gw.Close() })
	log.Info("ssh gateway", "listen", gw.Addr().String())
	return gw.Addr().(*net.TCPAddr).Port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key.PublicKey()))), nil
}

// frontEnds makes the HTTP server of the API, the pages, the previews
// and the capabilities' routes.
func (d *started) frontEnds(sshPort int, sshHostKey string) (*http.Server, *preview.Handler) {
	cfg, svc, st, log := d.cfg, d.svc, d.st, d.log
	pages := dashboard.New(svc, st, log, cfg.Hostname, cfg.Hostname != "")
	var prev *preview.Handler
	if cfg.Hostname != "" {
		prev = &preview.Handler{Store: st, Pages: pages, Hostname: cfg.Hostname, Scheme: "https", Port: httpsPort(cfg), Dial: svc.DialBox, Use: svc.Use,
			Served: e2b.ServedPort, Names: []string{e2b.APIHost(cfg.Hostname)}}
	} else if host, port, err := net.SplitHostPort(cfg.Listen); err == nil && port != "" {
		// Local mode: previews at http://PORT-BOX.localhost:PORT, which
		// browsers send to the loopback address; a browser without a
		// preview cookie signs in at the API's own address.
		if host == "" || net.ParseIP(host) == nil || net.ParseIP(host).IsUnspecified() {
			host = "127.0.0.1"
		}
		prev = &preview.Handler{Store: st, Pages: pages, Hostname: "localhost", Scheme: "http", Port: port,
			Main: net.JoinHostPort(host, port), Dial: svc.DialBox, Use: svc.Use}
	}
	srv := apiServer((&server.Server{Svc: svc, Store: st, Log: log, Name: serverName(cfg), SSHPort: sshPort, SSHHostKey: sshHostKey,
		Capabilities: d.caps, Pages: pages, URL: PublicURL(cfg), Preview: prev,
		CLI: &clients.Handler{Dir: cfg.CLIDir, URL: PublicURL(cfg)}}).Handler(), log)
	return srv, prev
}

// listen opens the API's unix socket (for the front door and local
// users) and TCP address, as configured.
func listen(cfg config.Config) ([]net.Listener, error) {
	var listeners []net.Listener
	if cfg.Socket != "" {
		os.Remove(cfg.Socket)
		l, err := net.Listen("unix", cfg.Socket)
		if err != nil {
			return nil, err
		}
		os.Chmod(cfg.Socket, 0o660)
		listeners = append(listeners, l)
	}
	if cfg.Listen != "" {
		l, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			for _, o := range listeners {
				o.Close()
			}
			return nil, err
		}
		listeners = append(listeners, l)
	}
	if len(listeners) == 0 {
		return nil, errors.New("nothing to listen on: set socket or listen")
	}
	return listeners, nil
}

// startLoops starts what runs on its own until ctx ends: the reconcile
// loop (which pings the watchdog), the warm pool, the nodes, the audit
// log's pruning, TTLs, idle stops, sign-in rechecks, metrics and disk
// checks.
func (d *started) startLoops(ctx context.Context, notify *units.Notifier) {
	cfg, svc, rec, log := d.cfg, d.svc, d.rec, d.log
	// The watchdog is pinged from the reconcile loop, after each pass, so a
	// stuck loop stops the pings and systemd restarts the service.
	every := cfg.ReconcileInterval
	if w := notify.Every(); w > 0 && w < every {
		every = w
	}
	// A box that changed under paddockd (its container died, was removed
	// or started by another hand, or the engine restarted) is looked at
	// at once, not at the next tick.
	kick, kickFn := kicker()
	go d.drv.Watch(ctx, kickFn)
	go loop(ctx, every, kick, func() {
		if _, err := rec.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("reconcile", "err", err)
		}
		// Uploads a crash cut off: their staging folders go once their
		// box runs again.
		if err := svc.CleanLeftovers(ctx); err != nil && ctx.Err() == nil {
			log.Error("cleaning upload leftovers", "err", err)
		}
		notify.Alive()
	})
	// The warm pool is refilled after each claim, and looked at every few
	// seconds (a pool box still starting, an image that moved).
	poolKick, poolKickFn := kicker()
	svc.PoolChanged = poolKickFn
	go loop(ctx, poolEvery, poolKick, func() {
		if _, err := svc.KeepPool(ctx); err != nil && ctx.Err() == nil {
			log.Error("warm pool", "err", err)
		}
	})
	servers, _ := capability[*nodes.Nodes](d.caps)
	go loop(ctx, nodesEvery, nil, func() {
		svc.LookAtNodes(ctx)
		// A box made elsewhere while its server was down: what it left
		// there goes once that server answers.
		if servers != nil {
			servers.FinishMoves(ctx)
		}
	})
	acc, _ := capability[*access.Access](d.caps)
	acc.PruneAudit()
	go loop(ctx, time.Hour, nil, acc.PruneAudit)
	// logged is a loop's pass that logs what fails.
	logged := func(what string, fn func(context.Context) error) func() {
		return func() {
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				log.Error(what, "err", err)
			}
		}
	}
	go loop(ctx, 500*time.Millisecond, nil, func() {
		if _, err := svc.ExpireTTLs(ctx); err != nil && ctx.Err() == nil {
			log.Error("ttl", "err", err)
		}
	})
	go loop(ctx, cfg.IdleCheckInterval, nil, logged("idle stop", svc.CheckIdle))
	if svc.SSO != nil {
		go loop(ctx, cfg.SSORecheck, nil, logged("sso recheck", acc.RecheckSSO))
	}
	if m, ok := svc.Metrics.(*metrics.Sampler); ok && cfg.MetricsInterval > 0 {
		go loop(ctx, cfg.MetricsInterval, nil, logged("metrics", m.Sample))
	}
	if cfg.DiskCheckInterval > 0 {
		go loop(ctx, cfg.DiskCheckInterval, nil, logged("disk check", svc.CheckDisk))
	}
	if d.ship != nil {
		go loop(ctx, cfg.ShipInterval, d.shipKick, logged("shipping snapshots", d.ship.Pass))
	}
	if d.backups != nil {
		go d.backups.Run(ctx, cfg.BackupEvery)
	}
}

// capability is the capability of type T among caps (server.Capabilities
// makes one of each).
func capability[T route.Capability](caps []route.Capability) (T, bool) {
	for _, c := range caps {
		if t, ok := c.(T); ok {
			return t, true
		}
	}
	var none T
	return none, false
}

// bucketsDir is where boxes' buckets are mounted (the engine's binds).
func bucketsDir(cfg config.Config) string { return filepath.Join(cfg.StateDir, "buckets", "mnt") }

// mountBuckets sets up the mounts of boxes' buckets (package buckets).
// Where they cannot be (no nsenter, rclone or FUSE), paddockd runs on,
// and a box with buckets is not made, its error saying why.
func (d *started) mountBuckets() {
	mt := &buckets.Mounter{Dir: bucketsDir(d.cfg), Cache: filepath.Join(d.cfg.StateDir, "buckets", "cache"),
		UID: d.cfg.BoxUID, GID: d.cfg.BoxUID, Log: d.log}
	if err := mt.Prepare(); err != nil {
		d.log.Warn("bucket mounts cannot be served here: boxes that mount buckets are not made", "err", err)
		d.rec.Binds = unserved{err}
		return
	}
	d.buckets = mt
	d.rec.Binds = mt
	d.onClose(mt.Close)
}

// unserved refuses every box with binds, saying why.
type unserved struct{ err error }

func (u unserved) Ready(context.Context, store.Box) error {
	return fmt.Errorf("bucket mounts cannot be served on this server: %w", u.err)
}

func (u unserved) Serve(ctx context.Context, b store.Box) error { return u.Ready(ctx, b) }

func (unserved) Keep(context.Context, []store.Box, map[string]bool) {}
