package service

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Quotas: what each member may have at once. The server's limits.* are
// every member's defaults; the owner sets any of them for one user
// ('paddock user quota NAME --boxes 5'), and puts them back to the
// default. Owners have none. Each refusal names the quota, where it came
// from, and the command that raises it.

// quota is what holds for one user.
type quota struct {
	api.QuotaLimits
	name   string
	member bool
	own    map[string]bool
	group  map[string]string // field → the group whose quota gives it
}

// quotaSource is what the store and its transactions share for quotas.
type quotaSource interface {
	GetUser(int64) (store.User, error)
	GetQuota(int64) (store.Quota, error)
	GroupsOf(int64) ([]string, error)
	GroupQuota(string) (store.Quota, error)
}

// quotaOf is what holds for user id (none for an owner, or a box of no
// user).
func (s *Service) quotaOf(src quotaSource, id int64) (quota, error) {
	if id == 0 {
		return quota{}, nil
	}
	u, err := src.GetUser(id)
	if errors.Is(err, store.ErrNotFound) {
		return quota{}, nil
	} else if err != nil {
		return quota{}, err
	}
	q := quota{name: u.Name, member: u.Role == store.RoleMember, own: map[string]bool{}, group: map[string]string{}}
	if !q.member {
		return q, nil
	}
	l := s.Cfg.Limits
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
func (q *quota) fromGroups(src quotaSource, id int64) error {
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

// source says where a quota's field comes from, as refusals name it.
func (q quota) source(field string, v any) string {
	if q.own[field] {
		return fmt.Sprintf("the quota set for %s: %s = %v", q.name, field, v)
	}
	if g := q.group[field]; g != "" {
		return fmt.Sprintf("the quota of their group %s: %s = %v", g, field, v)
	}
	return fmt.Sprintf("limits.%s = %v, the server's default", field, v)
}

// raise is how the owner raises a quota's field.
func (q quota) raise(field string) string {
	if g := q.group[field]; g != "" {
		flag := "--" + strings.ReplaceAll(field, "_", "-") + " N"
		if field == "types" {
			flag = "--types " + strings.Join(api.BoxTypes, ",")
		}
		return fmt.Sprintf("the owner can raise it for the group ('paddock group quota %s %s') or for them ('paddock user quota %s %s')", g, flag, q.name, flag)
	}
	if field == "types" {
		return fmt.Sprintf("the owner can allow more ('paddock user quota %s --types %s')", q.name, strings.Join(api.BoxTypes, ","))
	}
	return fmt.Sprintf("the owner can raise it ('paddock user quota %s --%s N')", q.name, strings.ReplaceAll(field, "_", "-"))
}

// over refuses one more of what: n is what the user has.
func (q quota) over(field string, n, limit int, what string) error {
	if limit <= 0 || n < limit {
		return nil
	}
	if n == 1 {
		what = strings.NewReplacer("boxes", "box", "drives", "drive", "jobs", "job").Replace(what)
	}
	return api.Conflict("%s has %d %s, the most allowed (%s): %s, or %s", q.name, n, what, q.source(field, limit), q.relief(field), q.raise(field))
}

func (q quota) relief(field string) string {
	switch field {
	case "running":
		return "stop one first"
	case "jobs":
		return "wait for one to end"
	}
	return "remove one first"
}

// typeAllowed refuses a box type the user's quota does not list.
func (q quota) typeAllowed(t string) error {
	if !q.member || len(q.Types) == 0 || slices.Contains(q.Types, t) {
		return nil
	}
	return &api.Error{Code: api.CodeForbidden, Field: "type", Message: fmt.Sprintf("%s may make boxes of type %s, not %s (%s): %s",
		q.name, strings.Join(q.Types, ", "), t, q.source("types", strings.Join(q.Types, ",")), q.raise("types"))}
}

// checkRunning refuses one more box meant to run, but the one named.
func (s *Service) checkRunning(tx *store.Tx, owner int64, box string) error {
	q, err := s.quotaOf(tx, owner)
	if err != nil {
		return err
	}
	return q.running(tx, owner, box)
}

// running refuses one more box meant to run (but the one named) to
// owner, whose quota q is.
func (q quota) running(tx *store.Tx, owner int64, box string) error {
	if !q.member || q.Running <= 0 {
		return nil
	}
	n, err := tx.CountRunning(owner, box)
	if err != nil {
		return err
	}
	return q.over("running", n, q.Running, "boxes running")
}

// owned refuses one more box or drive (what) to owner, whose quota q is.
func (q quota) owned(tx *store.Tx, owner int64, what string) error {
	if !q.member {
		return nil
	}
	boxes, drives, err := tx.CountOwned(owner)
	if err != nil {
		return err
	}
	if what == "boxes" {
		return q.over("boxes", boxes, q.Boxes, "boxes")
	}
	return q.over("drives", drives, q.Drives, "drives")
}

// QuotaView is user u's quota, where each bound comes from, and what u
// uses of it.
func (s *Service) QuotaView(u store.User) (api.UserQuota, error) {
	q, err := s.quotaOf(s.Store, u.ID)
	if err != nil {
		return api.UserQuota{}, err
	}
	out := api.UserQuota{User: u.Name, Role: u.Role, Limits: q.QuotaLimits, Own: []string{}}
	if out.Limits.Types == nil {
		out.Limits.Types = []string{}
	}
	for _, f := range api.QuotaFields {
		if q.own[f] {
			out.Own = append(out.Own, f)
		}
	}
	if len(q.group) > 0 {
		out.Groups = q.group
	}
	// Read outside a declaration: reading moves no serial.
	if out.Use.Boxes, out.Use.Drives, err = s.Store.CountOwned(u.ID); err != nil {
		return out, err
	}
	if out.Use.Running, err = s.Store.CountRunning(u.ID, ""); err != nil {
		return out, err
	}
	out.Use.Jobs, err = s.runningJobs(u.ID)
	return out, err
}
