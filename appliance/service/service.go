// Package service holds the verbs of paddockd: create, stop, start,
// snapshot, restore, fork and remove boxes; make and remove drives; run
// commands and jobs; copy files. A verb that changes what exists writes the
// declared state in one transaction and then runs the reconciler; it never
// calls the engine to create or stop anything itself, so the CLI, the API
// and the TTL timer share one path with the periodic reconcile.
package service

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/auth"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/node"
	"github.com/paddock-dev/paddock/appliance/pool"
	"github.com/paddock-dev/paddock/appliance/reconcile"
	"github.com/paddock-dev/paddock/appliance/sso"
	"github.com/paddock-dev/paddock/appliance/store"
	"github.com/paddock-dev/paddock/policies"
)

// Service is the set of verbs over one store, reconciler and driver.
type Service struct {
	Store  *store.Store
	Rec    *reconcile.Reconciler
	Driver driver.Driver
	Cfg    config.Config
	Log    *slog.Logger
	// Net is the box network; boxes get fixed addresses in it.
	Net policies.Network
	// Firewall reports drops and DNS decisions (nil: none).
	Firewall interface {
		Report(box string) (policies.Report, error)
	}
	// Cluster is the servers the boxes are placed on (nil: this one only).
	Cluster *node.Cluster
	// Sealer encrypts secrets at rest (nil: no secrets).
	Sealer *auth.Sealer
	// BrokerURL is where this server's boxes reach the credential broker
	// (http://GATEWAY:PORT; "" when it is off); BrokerKey makes their
	// stand-ins (broker.go).
	BrokerURL string
	BrokerKey []byte
	// Audit writes the audit log (nil: none is kept).
	Audit *Auditor
	// Life bounds background work (jobs); it ends when the daemon stops.
	Life context.Context
	Now  func() time.Time

	// PoolChanged, when set, is told that a box was claimed from the warm
	// pool (which is refilled in the background).
	PoolChanged func()
	// Fore counts the requests people wait on; background work waits
	// for a lull in them.
	Fore Foreground

	memMu sync.Mutex              // guards live, restoring, diskGrace, uses and kept
	live  map[store.Leftover]bool // staging folders of uploads in progress
	// restoring holds the drives whose restore is under way.
	restoring map[string]bool
	// diskGrace holds when boxes stopped for their disk were started again.
	diskGrace map[string]time.Time
	// cold holds the pool boxes whose warm exec could not start (an
	// image without python3): not tried again while paddockd runs.
	cold pool.Cold
	// uses is each box's use, for its idle stop (idle.go).
	uses map[string]*boxUse
	// kept is what capabilities keep of boxes (KeepsOfBox).
	kept   []keptOfBox
	wakeMu sync.Mutex // one wake at a time
	// SSO are the single sign-on providers (nil: none); SSOKey seals
	// their refresh tokens in the store (sso.go).
	SSO    *sso.Set
	SSOKey []byte
	// Moves moves boxes between servers (package nodes), for a fork onto
	// another server; nil: none.
	Moves Mover
	// Metrics is the sampler of boxes' use (package metrics), which the
	// events stream reads and the disk check tells; nil: none.
	Metrics Sampler

	// claimCut, when set (by tests), ends a claim just after it is
	// declared, as a crash there would.
	claimCut func() error
}

// Time is the core's clock (Now when set): what capabilities stamp
// with.
func (s *Service) Time() time.Time { return s.now() }

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// EngineName is the name of box's engine objects: its own, or the warm
// pool's for a box claimed from it. A box that is gone keeps its name.
func (s *Service) EngineName(box string) string {
	if b, err := s.Store.GetBox(box); err == nil {
		return b.Key()
	}
	return box
}

// ReconcileFor runs the reconciler and returns the error, if any, of the
// changes about one address (e.g. "box.web").
func (s *Service) ReconcileFor(ctx context.Context, addrs ...string) error {
	res, err := s.Rec.Run(ctx)
	if err != nil {
		return err
	}
	for _, a := range addrs {
		if e := res.Errors[a]; e != nil {
			return fmt.Errorf("%s: %w", a, e)
		}
	}
	return nil
}

// Reconcile runs the reconciler once and tells what it did to the objects
// the user of ctx may see (a member hears nothing of other users' boxes,
// drives or snapshots, not even their names).
func (s *Service) Reconcile(ctx context.Context) (reconcile.Result, error) {
	res, err := s.Rec.Run(ctx)
	res = withoutPool(res)
	if u, ok := caller.From(ctx); ok && !u.SeesAll() {
		out := reconcile.Result{Errors: map[string]error{}}
		for _, c := range res.Changes {
			if s.sees(u, c) {
				out.Changes = append(out.Changes, c)
			}
			if e := res.Errors[c.Address()]; e != nil && s.sees(u, c) {
				out.Errors[c.Address()] = e
			}
		}
		res = out
	}
	return res, err
}

// sees says whether u owns the object a change is about; of an object that
// is gone nobody can tell, and so it is not told.
func (s *Service) sees(u store.User, c reconcile.Change) bool {
	box := c.Box
	switch {
	case c.Snapshot != "":
		sns, err := s.Store.ListSnapshots("")
		if err != nil {
			return false
		}
		box = ""
		for _, sn := range sns {
			if sn.ID == c.Snapshot {
				box = sn.Box
			}
		}
	case c.Volume.Kind == driver.KindDrive:
		ds, err := s.Store.ListDrives()
		for _, d := range ds {
			if d.Name == c.Volume.Name {
				return err == nil && d.Owner == u.ID
			}
		}
		return false
	case c.Volume.Kind == driver.KindBoxData:
		box = c.Volume.Name
	}
	if box == "" {
		return false
	}
	b, err := s.Store.GetBox(box)
	return err == nil && b.Owner == u.ID
}

var adjectives = []string{"amber", "bold", "brisk", "calm", "clever", "dusty", "eager", "fuzzy", "gentle", "happy", "jolly", "keen", "lively", "mellow", "nimble", "proud", "quiet", "rapid", "sunny", "swift", "tidy", "witty"}
var animals = []string{"badger", "bison", "colt", "crane", "ferret", "finch", "fox", "gecko", "heron", "ibex", "koala", "lynx", "marten", "newt", "otter", "panda", "quail", "robin", "stoat", "tapir", "wren", "yak"}

func pick(words []string) string {
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(words))))
	return words[n.Int64()]
}

func (s *Service) generateName() (string, error) {
	for i := 0; i < 50; i++ {
		name := pick(adjectives) + "-" + pick(animals)
		if i > 10 {
			name += "-" + auth.RandomHex(2)
		}
		if _, err := s.Store.GetBox(name); errors.Is(err, store.ErrNotFound) {
			return name, nil
		}
	}
	return "", errors.New("could not find a free box name")
}

func toAPIBox(b store.Box, types map[string]config.BoxType) api.Box {
	out := api.Box{
		Name: b.Name, Type: b.Type, Image: b.Image, TTLSeconds: int64(b.TTL / time.Second),
		ExpiresAt: b.ExpiresAt, Env: b.Env, Desired: b.Desired, Status: b.Observed,
		Error: b.ObservedEr, Created: b.Created, From: b.From,
		CPUs: types[b.Type].CPUs, MemoryMiB: types[b.Type].MemoryMiB,
		Project: b.Project, Policy: b.Policy, Agent: b.Agent, Desktop: b.Desktop, Setup: b.Setup, IP: b.IP, Note: b.Note,
		Node: b.Node, NodeLabels: b.NodeLabels, Labels: b.Labels,
		IdleStop: api.IdleStopText(idleStopOf(b, types)), Sleeping: b.Asleep(),
		OOMKills: b.OOMKills, OOMAt: b.OOMAt,
	}
	if b.Setup == "failed" {
		out.Status, out.Error = "failed", "setup failed: "+b.SetupError
	}
	for _, m := range b.Mounts {
		out.Mounts = append(out.Mounts, api.Mount{Drive: m.Drive, Path: m.Path, ReadOnly: m.ReadOnly})
	}
	out.Buckets = APIBuckets(b.Buckets)
	return out
}

// Types returns the box types as the reconciler wants them.
func Types(c config.Config) map[string]reconcile.BoxType {
	out := map[string]reconcile.BoxType{}
	for k, v := range c.Types {
		out[k] = reconcile.BoxType{CPUs: v.CPUs, MemoryMiB: v.MemoryMiB, Pids: v.Pids}
	}
	return out
}

// AssignMissingIPs gives every box that has no address one (boxes made
// before addresses were fixed).
func (s *Service) AssignMissingIPs() error {
	return s.Store.Declare(func(tx *store.Tx) error {
		boxes, err := tx.ListBoxes()
		if err != nil {
			return err
		}
		ns, err := tx.ListNodes()
		if err != nil {
			return err
		}
		for _, b := range boxes {
			if b.IP != "" || !s.Net.Subnet.IsValid() {
				continue
			}
			if err := s.Address(tx, &b, ns); err != nil {
				return err
			}
			if err := tx.UpdateBox(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// Settle finishes a verb on a box: if declaring it failed, that error;
// otherwise reconcile and return the box as it now is, with the errors of
// the changes about addrs.
func (s *Service) Settle(ctx context.Context, name string, declErr error, addrs ...string) (api.Box, error) {
	if declErr != nil {
		return api.Box{}, declErr
	}
	rerr := s.ReconcileFor(ctx, addrs...)
	b, err := s.GetBox(name)
	if err != nil {
		return b, err
	}
	return b, rerr
}

// Providers are the single sign-on providers (nil: none); ProvidersKey
// seals their refresh tokens in the store.
func (s *Service) Providers() *sso.Set { return s.SSO }

// ProvidersKey is the key that seals the providers' refresh tokens.
func (s *Service) ProvidersKey() []byte { return s.SSOKey }

// StoreBuckets are bucket mounts as the store keeps them.
func StoreBuckets(bs []api.BucketMount) []store.BucketMount {
	var out []store.BucketMount
	for _, m := range bs {
		out = append(out, store.BucketMount(m))
	}
	return out
}

// APIBuckets are bucket mounts as the API shows them.
func APIBuckets(bs []store.BucketMount) []api.BucketMount {
	var out []api.BucketMount
	for _, m := range bs {
		out = append(out, api.BucketMount(m))
	}
	return out
}
