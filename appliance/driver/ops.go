package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// Ops: a driver's optional abilities, declared in one place.
//
// An ability whose question and answer are JSON values (a box's disk,
// its use, a path's kind, a hostname to set...) is an Op, declared once
// below with what it is about and how a driver that has it in Go is
// asked. A driver that only carries calls elsewhere (the control plane's
// cluster driver, which sends each to the server that holds its object;
// a node's remote driver, which sends it to that server's agent) is a
// Sender: it carries every op, with no code of its own per op, and the
// node agent serves every op of the table (Serve). So a new ability is
// added here, implemented by the drivers that have it (docker, fake), and
// reaches every server of a cluster. Callers ask an op of any driver
// (op.Do), and whether a driver can be asked at all (op.Has).
//
// Abilities whose arguments or answers are streams (files as the box's
// user, snapshots shipped between servers, volumes' archives, execs) are
// interfaces of their own (UserFiles, SnapshotShipper, ...), carried by
// hand.

// Places a call can be about, as the cluster driver places objects: a
// box, a snapshot, a volume (its own Kind: KindDrive, KindBoxData), or
// "" for the control plane's own server.
const (
	KindBox      = "box"
	KindSnapshot = "snapshot"
)

// Sender is a driver that carries ops to where they are done: Send asks
// op (an Op's Name) about the object kind/name with args, and decodes
// the answer into reply.
type Sender interface {
	Send(ctx context.Context, op, kind, name string, args, reply any) error
}

// Op is one optional ability: a question of type A, an answer of type R.
type Op[A, R any] struct {
	// Name is the op's name on the wire (the agent's ops/NAME).
	Name string
	// About is what a question is about (see the kinds above).
	About func(A) (kind, name string)
	// Native says whether a driver has the ability in Go; Call asks it
	// of one that has.
	Native func(Driver) bool
	Call   func(ctx context.Context, d Driver, a A) (R, error)
}

// implements is an Op's Native for the interface I.
func implements[I any](d Driver) bool {
	_, ok := d.(I)
	return ok
}

// Has says whether d can be asked op: it has it, or carries it
// elsewhere (where the far driver may still lack it:
// errors.ErrUnsupported then).
func (o Op[A, R]) Has(d Driver) bool {
	_, ok := d.(Sender)
	return ok || o.Native(d)
}

// Do asks op of d: its own, or where it carries it. A driver that has
// neither is errors.ErrUnsupported.
func (o Op[A, R]) Do(ctx context.Context, d Driver, a A) (R, error) {
	if o.Native(d) {
		return o.Call(ctx, d, a)
	}
	var r R
	if s, ok := d.(Sender); ok {
		kind, name := o.About(a)
		return r, s.Send(ctx, o.Name, kind, name, a, &r)
	}
	return r, fmt.Errorf("the driver has no %s: %w", o.Name, errors.ErrUnsupported)
}

// run is Do with its question and answer untyped: a Sender that reaches
// a driver of its own (the cluster's, for the control plane's server)
// asks it so.
func (o Op[A, R]) run(ctx context.Context, d Driver, args, reply any) error {
	a, ok := args.(A)
	if !ok {
		return fmt.Errorf("%s: a question of type %T, want %T", o.Name, args, a)
	}
	r, err := o.Do(ctx, d, a)
	if p, ok := reply.(*R); ok {
		*p = r
	} else if reply != nil {
		return fmt.Errorf("%s: an answer into %T, want *%T", o.Name, reply, r)
	}
	return err
}

// serve is Do with its question and answer as JSON: the node agent.
func (o Op[A, R]) serve(ctx context.Context, d Driver, in []byte) (any, error) {
	var a A
	if err := json.Unmarshal(in, &a); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Name, err)
	}
	return o.Do(ctx, d, a)
}

// op is an Op of any type, as the table holds it.
type op interface {
	run(ctx context.Context, d Driver, args, reply any) error
	serve(ctx context.Context, d Driver, in []byte) (any, error)
}

var ops = map[string]op{}

func declare[A, R any](o Op[A, R]) Op[A, R] {
	if _, dup := ops[o.Name]; dup {
		panic("driver: op " + o.Name + " declared twice")
	}
	ops[o.Name] = o
	return o
}

// OpNames lists every op declared, sorted.
func OpNames() []string {
	out := make([]string, 0, len(ops))
	for n := range ops {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Run asks d the op named name with args (of the op's question type),
// decoding into reply (a pointer to its answer type): how a Sender that
// reaches a driver of its own carries a call to it.
func Run(ctx context.Context, d Driver, name string, args, reply any) error {
	o, ok := ops[name]
	if !ok {
		return fmt.Errorf("no op %q: %w", name, errors.ErrUnsupported)
	}
	return o.run(ctx, d, args, reply)
}

// Serve asks d the op named name with a question in JSON, for the node
// agent; its answer is the op's answer type.
func Serve(ctx context.Context, d Driver, name string, in []byte) (any, error) {
	o, ok := ops[name]
	if !ok {
		return nil, fmt.Errorf("no op %q: %w", name, errors.ErrUnsupported)
	}
	return o.serve(ctx, d, in)
}

// BoxPath is a path in a box.
type BoxPath struct {
	Box  string `json:"box"`
	Path string `json:"path"`
}

// BoxHostname is a hostname for a box.
type BoxHostname struct {
	Box      string `json:"box"`
	Hostname string `json:"hostname"`
}

// None is an op's empty answer.
type None struct{}

func aboutBox(box string) (string, string)        { return KindBox, box }
func aboutSnapshot(id string) (string, string)    { return KindSnapshot, id }
func aboutVolume(v VolumeRef) (string, string)    { return v.Kind, v.Name }
func aboutControlPlane(string) (string, string)   { return "", "" }
func aboutBoxPath(p BoxPath) (string, string)     { return KindBox, p.Box }
func aboutBoxName(h BoxHostname) (string, string) { return KindBox, h.Box }

// The ops.
var (
	// StatPath says whether a path in a box is a folder (PathStater).
	StatPath = declare(Op[BoxPath, bool]{Name: "stat-path", About: aboutBoxPath, Native: implements[PathStater],
		Call: func(ctx context.Context, d Driver, a BoxPath) (bool, error) {
			return d.(PathStater).StatPath(ctx, a.Box, a.Path)
		}})
	// DiskUsage is what a box has written (DiskMeter).
	DiskUsage = declare(Op[string, int64]{Name: "disk-usage", About: aboutBox, Native: implements[DiskMeter],
		Call: func(ctx context.Context, d Driver, box string) (int64, error) {
			return d.(DiskMeter).DiskUsage(ctx, box)
		}})
	// VolumeUsage is what a volume holds (DiskMeter).
	VolumeUsage = declare(Op[VolumeRef, int64]{Name: "volume-usage", About: aboutVolume, Native: implements[DiskMeter],
		Call: func(ctx context.Context, d Driver, v VolumeRef) (int64, error) {
			return d.(DiskMeter).VolumeUsage(ctx, v)
		}})
	// BoxUsage is what a running box uses now (Meter).
	BoxUsage = declare(Op[string, Usage]{Name: "box-usage", About: aboutBox, Native: implements[Meter],
		Call: func(ctx context.Context, d Driver, box string) (Usage, error) { return d.(Meter).BoxUsage(ctx, box) }})
	// Foreground gives a box made in the background a box's CPU share
	// (Foregrounder).
	Foreground = declare(Op[string, None]{Name: "foreground", About: aboutBox, Native: implements[Foregrounder],
		Call: func(ctx context.Context, d Driver, box string) (None, error) {
			return None{}, d.(Foregrounder).Foreground(ctx, box)
		}})
	// SetHostname gives a running box another hostname (Hostnamer).
	SetHostname = declare(Op[BoxHostname, None]{Name: "set-hostname", About: aboutBoxName, Native: implements[Hostnamer],
		Call: func(ctx context.Context, d Driver, a BoxHostname) (None, error) {
			return None{}, d.(Hostnamer).SetHostname(ctx, a.Box, a.Hostname)
		}})
	// WarmExec starts a box's warm exec; true when it started one
	// (ExecWarmer).
	WarmExec = declare(Op[string, bool]{Name: "warm-exec", About: aboutBox, Native: implements[ExecWarmer],
		Call: func(ctx context.Context, d Driver, box string) (bool, error) {
			return d.(ExecWarmer).WarmExec(ctx, box)
		}})
	// DropWarm ends a box's warm exec, if it has one (ExecWarmer).
	DropWarm = declare(Op[string, None]{Name: "drop-warm", About: aboutBox, Native: implements[ExecWarmer],
		Call: func(ctx context.Context, d Driver, box string) (None, error) {
			d.(ExecWarmer).DropWarm(box)
			return None{}, nil
		}})
	// ImageID is which image a reference names now, on the control
	// plane's own server (ImageIDer): nodes are expected to hold the
	// same images.
	ImageID = declare(Op[string, string]{Name: "image-id", About: aboutControlPlane, Native: implements[ImageIDer],
		Call: func(ctx context.Context, d Driver, ref string) (string, error) {
			return d.(ImageIDer).ImageID(ctx, ref)
		}})
	// SnapshotSize is the bytes a snapshot adds to what its box was made
	// from (SnapshotSizer).
	SnapshotSize = declare(Op[string, int64]{Name: "snapshot-size", About: aboutSnapshot, Native: implements[SnapshotSizer],
		Call: func(ctx context.Context, d Driver, id string) (int64, error) {
			return d.(SnapshotSizer).SnapshotSize(ctx, id)
		}})
)
