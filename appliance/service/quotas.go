package service

import (
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/quota"
	"github.com/paddock-dev/paddock/appliance/store"
)

// checkRunning refuses one more box meant to run, but the one named.
func (s *Service) checkRunning(tx *store.Tx, owner int64, box string) error {
	q, err := s.quotaOf(tx, owner)
	if err != nil {
		return err
	}
	return q.CheckRunning(tx, owner, box)
}

// quotaOf is what holds for user id, under the server's limits.
func (s *Service) quotaOf(src quota.Source, id int64) (quota.Quota, error) {
	return quota.Of(src, s.Cfg.Limits, id)
}

// QuotaView is user u's quota, where each bound comes from, and what u
// uses of it.
func (s *Service) QuotaView(u store.User) (api.UserQuota, error) {
	q, err := s.quotaOf(s.Store, u.ID)
	if err != nil {
		return api.UserQuota{}, err
	}
	out := api.UserQuota{User: u.Name, Role: u.Role, Limits: q.QuotaLimits, Own: q.Own(), Groups: q.Groups()}
	if out.Limits.Types == nil {
		out.Limits.Types = []string{}
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
