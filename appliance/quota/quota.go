// Package quota is what each member may have at once, and the
// refusals past it. The server's limits.* are every member's defaults;
// a group's quota holds for its members (the most generous of their
// groups'), and the owner sets any field for one user ('paddock user
// quota NAME --boxes 5') or puts it back to the default. Owners and
// admins have none. Each refusal names the quota, where it came from,
// and the command that raises it.
//
// The rules only: the core asks them where a box or drive is made, a
// box starts or a job begins (package service), the access capability
// shows them (package access).
package quota

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/config"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Quota is what holds for one user.
type Quota struct {
	api.QuotaLimits
	// Name is the user's; Member says whether they are a member (owners
	// and admins have no quota).
	Name   string
	Member bool
	own    map[string]bool
	group  map[string]string // field → the group whose quota gives it
}

// Source is what the store and its transactions share for quotas.
type Source interface {
	GetUser(int64) (store.User, error)
	GetQuota(int64) (store.Quota, error)
	GroupsOf(int64) ([]string, error)
	GroupQuota(string) (store.Quota, error)
}

// Of is what holds for user id (none for an owner, or a box of no user),
// with the server's limits as every member's defaults.
func Of(src Source, l config.Limits, id int64) (Quota, error) {
	if id == 0 {
		return Quota{}, nil
	}
	u, err := src.GetUser(id)
	if errors.Is(err, store.ErrNotFound) {
		return Quota{}, nil
	} else if err != nil {
		return Quota{}, err
	}
	q := Quota{Name: u.Name, Member: u.Role == store.RoleMember, own: map[string]bool{}, group: map[string]string{}}
	if !q.Member {
		return q, nil
	}
	q.QuotaLimits = api.QuotaLimits{Boxes: l.Boxes, Running: l.Running, Drives: l.Drives, DriveGiB: l.DriveGiB, Jobs: l.Jobs, Types: slices.Clone(l.Types)}
	if err := q.fromGroups(src, id); err != nil {
		return q, err
	}
	set, err := src.GetQuota(id)
	if err != nil {
		return q, err
	}
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{{"boxes", set.Boxes, &q.Boxes}, {"running", set.Running, &q.Running}, {"drives", set.Drives, &q.Drives}, {"jobs", set.Jobs, &q.Jobs}} {
		if f.v != nil {
			*f.to, q.own[f.name] = *f.v, true
			delete(q.group, f.name)
		}
	}
	if set.DriveGiB != nil {
		q.DriveGiB, q.own["drive_gib"] = *set.DriveGiB, true
		delete(q.group, "drive_gib")
	}
	if set.Types != nil {
		q.Types, q.own["types"] = slices.Clone(*set.Types), true
		delete(q.group, "types")
	}
	return q, nil
}

// fromGroups applies the quotas of the user's groups over the server's
// defaults: for each field some group sets, the most generous of those
// groups' values (no bound, else the highest; the types of all of them).
func (q *Quota) fromGroups(src Source, id int64) error {
	groups, err := src.GroupsOf(id)
	if err != nil {
		return err
	}
	more := func(a, b int) bool { return a > 0 && (b == 0 || b > a) } // is b more generous than a?
	for _, g := range groups {
		gq, err := src.GroupQuota(g)
		if err != nil {
			return err
		}
		for _, f := range []struct {
			name string
			v    *int
			to   *int
		}{{"boxes", gq.Boxes, &q.Boxes}, {"running", gq.Running, &q.Running}, {"drives", gq.Drives, &q.Drives}, {"jobs", gq.Jobs, &q.Jobs}} {
			if f.v == nil {
				continue
			}
			if _, had := q.group[f.name]; !had || more(*f.to, *f.v) {
				*f.to, q.group[f.name] = *f.v, g
			}
		}
		if gq.DriveGiB != nil {
			if _, had := q.group["drive_gib"]; !had || (q.DriveGiB > 0 && (*gq.DriveGiB == 0 || *gq.DriveGiB > q.DriveGiB)) {
				q.DriveGiB, q.group["drive_gib"] = *gq.DriveGiB, g
			}
		}
		if gq.Types != nil {
			if _, had := q.group["types"]; !had {
				q.Types, q.group["types"] = slices.Clone(*gq.Types), g
			} else if len(q.Types) > 0 {
				if len(*gq.Types) == 0 {
					q.Types = nil // every type
				}
				for _, t := range *gq.Types {
					if !slices.Contains(q.Types, t) {
						q.Types = append(q.Types, t)
					}
				}
			}
		}
	}
	return nil
}

// Source says where a quota's field comes from, as refusals name it.
func (q Quota) Source(field string, v any) string {
	if q.own[field] {
		return fmt.Sprintf("the quota set for %s: %s = %v", q.Name, field, v)
	}
	if g := q.group[field]; g != "" {
		return fmt.Sprintf("the quota of their group %s: %s = %v", g, field, v)
	}
	return fmt.Sprintf("limits.%s = %v, the server's default", field, v)
}

// Raise is how the owner raises a quota's field.
func (q Quota) Raise(field string) string {
	if g := q.group[field]; g != "" {
		flag := "--" + strings.ReplaceAll(field, "_", "-") + " N"
		if field == "types" {
			flag = "--types " + strings.Join(api.BoxTypes, ",")
		}
		return fmt.Sprintf("the owner can raise it for the group ('paddock group quota %s %s') or for them ('paddock user quota %s %s')", g, flag, q.Name, flag)
	}
	if field == "types" {
		return fmt.Sprintf("the owner can allow more ('paddock user quota %s --types %s')", q.Name, strings.Join(api.BoxTypes, ","))
	}
	return fmt.Sprintf("the owner can raise it ('paddock user quota %s --%s N')", q.Name, strings.ReplaceAll(field, "_", "-"))
}

// Over refuses one more of what: n is what the user has.
func (q Quota) Over(field string, n, limit int, what string) error {
	if limit <= 0 || n < limit {
		return nil
	}
	if n == 1 {
		what = strings.NewReplacer("boxes", "box", "drives", "drive", "jobs", "job").Replace(what)
	}
	return api.OverQuota("%s has %d %s, the most allowed (%s): %s, or %s", q.Name, n, what, q.Source(field, limit), q.relief(field), q.Raise(field))
}

func (q Quota) relief(field string) string {
	switch field {
	case "running":
		return "stop one first"
	case "jobs":
		return "wait for one to end"
	}
	return "remove one first"
}

// TypeAllowed refuses a box type the user's quota does not list.
func (q Quota) TypeAllowed(t string) error {
	if !q.Member || len(q.Types) == 0 || slices.Contains(q.Types, t) {
		return nil
	}
	return &api.Error{Code: api.CodeForbidden, Field: "type", Message: fmt.Sprintf("%s may make boxes of type %s, not %s (%s): %s",
		q.Name, strings.Join(q.Types, ", "), t, q.Source("types", strings.Join(q.Types, ",")), q.Raise("types"))}
}

// CheckRunning refuses one more box meant to run (but the one named) to
// owner, whose quota q is.
func (q Quota) CheckRunning(tx *store.Tx, owner int64, box string) error {
	if !q.Member || q.Running <= 0 {
		return nil
	}
	n, err := tx.CountRunning(owner, box)
	if err != nil {
		return err
	}
	return q.Over("running", n, q.Running, "boxes running")
}

// CheckOwned refuses one more box or drive (what) to owner, whose quota q is.
func (q Quota) CheckOwned(tx *store.Tx, owner int64, what string) error {
	if !q.Member {
		return nil
	}
	boxes, drives, err := tx.CountOwned(owner)
	if err != nil {
		return err
	}
	if what == "boxes" {
		return q.Over("boxes", boxes, q.Boxes, "boxes")
	}
	return q.Over("drives", drives, q.Drives, "drives")
}

// Own lists the fields set for the user themself, in api.QuotaFields'
// order.
func (q Quota) Own() []string {
	out := []string{}
	for _, f := range api.QuotaFields {
		if q.own[f] {
			out = append(out, f)
		}
	}
	return out
}

// Groups maps each field a group sets to that group (nil: none).
func (q Quota) Groups() map[string]string {
	if len(q.group) == 0 {
		return nil
	}
	return q.group
}
