package store

import "database/sql"

// Sources of group membership: the owner's, or a sign-in provider's
// ("sso:ID").
const GroupByOwner = "owner"

// AddToGroup puts a user in a group (from source).
func (s *Store) AddToGroup(user int64, group, source string) error {
	_, err := s.q.Exec(`INSERT OR IGNORE INTO user_groups (user_id, grp, source) VALUES (?,?,?)`, user, group, source)
	return err
}

// RemoveFromGroup takes a user out of a group as source put them in;
// ErrNotFound when they were not.
func (s *Store) RemoveFromGroup(user int64, group, source string) error {
	res, err := s.q.Exec(`DELETE FROM user_groups WHERE user_id=? AND grp=? AND source=?`, user, group, source)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// SetGroupsFrom replaces the groups a source put a user in (a sign-in
// provider's, at each sign-in); a user whose groups did not change is
// not written.
func (s *Store) SetGroupsFrom(user int64, source string, groups []string) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	have := map[string]bool{}
	rows, err := tx.Query(`SELECT grp FROM user_groups WHERE user_id=? AND source=?`, user, source)
	if err != nil {
		return err
	}
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return err
		}
		have[g] = true
	}
	rows.Close()
	want := map[string]bool{}
	for _, g := range groups {
		want[g] = true
		if !have[g] {
			if _, err := tx.Exec(`INSERT INTO user_groups (user_id, grp, source) VALUES (?,?,?)`, user, g, source); err != nil {
				return err
			}
		}
	}
	for g := range have {
		if !want[g] {
			if _, err := tx.Exec(`DELETE FROM user_groups WHERE user_id=? AND grp=? AND source=?`, user, g, source); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// GroupsOf lists a user's groups (each once, whatever put them there).
func (s *Store) GroupsOf(user int64) ([]string, error) { return groupsOf(s.db, user) }

// GroupsOf is Store.GroupsOf in the transaction.
func (t *Tx) GroupsOf(user int64) ([]string, error) { return groupsOf(t.tx, user) }

func groupsOf(q querier, user int64) ([]string, error) {
	return listAll(q, `SELECT DISTINCT grp FROM user_groups WHERE user_id=? ORDER BY grp`, func(r scanner) (string, error) {
		var g string
		return g, r.Scan(&g)
	}, user)
}

// GroupMember is a user in a group, and what put them there.
type GroupMember struct {
	Group  string
	UserID int64
	Source string
}

// GroupMembers lists every group's members.
func (s *Store) GroupMembers() ([]GroupMember, error) {
	return listAll(s.q, `SELECT grp, user_id, source FROM user_groups ORDER BY grp, user_id`, func(r scanner) (GroupMember, error) {
		var m GroupMember
		return m, r.Scan(&m.Group, &m.UserID, &m.Source)
	})
}

// GroupQuota is what the owner set for a group (all nil: nothing).
func (s *Store) GroupQuota(group string) (Quota, error) { return groupQuota(s.db, group) }

// GroupQuota is Store.GroupQuota in the transaction.
func (t *Tx) GroupQuota(group string) (Quota, error) { return groupQuota(t.tx, group) }

func groupQuota(q querier, group string) (Quota, error) {
	return readQuota(q.QueryRow(`SELECT boxes, running, drives, drive_gib, jobs, types FROM group_quotas WHERE grp=?`, group))
}

// SetGroupQuota replaces what is set for a group.
func (s *Store) SetGroupQuota(group string, q Quota) error {
	return s.setQuotaRow("group_quotas", "grp", group, q)
}

// GroupQuotas lists the groups that have a quota.
func (s *Store) GroupQuotas() ([]string, error) {
	return listAll(s.q, `SELECT grp FROM group_quotas ORDER BY grp`, func(r scanner) (string, error) {
		var g string
		return g, r.Scan(&g)
	})
}

// SetGroupGrant shares a box with a group.
func (s *Store) SetGroupGrant(box, group, access string) error {
	_, err := s.q.Exec(`INSERT INTO group_grants (box, grp, access) VALUES (?,?,?)
		ON CONFLICT (box, grp) DO UPDATE SET access=excluded.access`, box, group, access)
	return err
}

// RemoveGroupGrant stops sharing a box with a group.
func (s *Store) RemoveGroupGrant(box, group string) error {
	res, err := s.q.Exec(`DELETE FROM group_grants WHERE box=? AND grp=?`, box, group)
	if err != nil {
		return err
	}
	return oneRow(res)
}

// GroupGrants lists the groups a box is shared with (group → access).
func (s *Store) GroupGrants(box string) (map[string]string, error) {
	rows, err := s.q.Query(`SELECT grp, access FROM group_grants WHERE box=?`, box)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var g, a string
		if err := rows.Scan(&g, &a); err != nil {
			return nil, err
		}
		out[g] = a
	}
	return out, rows.Err()
}

// GroupGrantsOf lists the boxes shared with any of a user's groups, with
// the highest access among them.
func (s *Store) GroupGrantsOf(user int64) ([]Grant, error) {
	return listAll(s.q, `SELECT g.box, ?, CASE max(CASE g.access WHEN 'member' THEN 2 ELSE 1 END) WHEN 2 THEN 'member' ELSE 'viewer' END
		FROM group_grants g JOIN user_groups u ON u.grp = g.grp
		WHERE u.user_id=? GROUP BY g.box ORDER BY g.box`, scanGrant, user, user)
}

// GroupGrantOf is the highest access any of a user's groups has to a box
// ("" when none).
func (s *Store) GroupGrantOf(box string, user int64) (string, error) {
	var a sql.NullString
	err := s.q.QueryRow(`SELECT CASE max(CASE g.access WHEN 'member' THEN 2 ELSE 1 END) WHEN 2 THEN 'member' WHEN 1 THEN 'viewer' END
		FROM group_grants g JOIN user_groups u ON u.grp = g.grp WHERE g.box=? AND u.user_id=?`, box, user).Scan(&a)
	return a.String, err
}
