package access

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/route"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Routes registers the access routes of the API.
func (a *Access) Routes(r route.API) {
	p := "/" + api.Version
	r.Handle("GET "+p+"/tokens", a.listTokens)
	r.Handle("POST "+p+"/tokens", a.createTokenRoute)
	r.Handle("DELETE "+p+"/tokens/{name}", a.revokeTokenRoute)
	r.Handle("GET "+p+"/keys", a.listKeys)
	r.Handle("POST "+p+"/keys", a.addKeyRoute)
	r.Handle("DELETE "+p+"/keys/{name}", a.removeKeyRoute)
	r.Handle("GET "+p+"/users", a.listUsers)
	r.Handle("POST "+p+"/users/invites", a.inviteUser)
	r.Handle("GET "+p+"/users/invites", a.listInvites)
	r.Handle("DELETE "+p+"/users/invites/{id}", a.revokeInviteRoute)
	r.Handle("DELETE "+p+"/users/{user}", a.removeUserRoute)
	r.Handle("GET "+p+"/users/{user}/quota", a.getQuota)
	r.Handle("PUT "+p+"/users/{user}/quota", a.setQuotaRoute)
	r.Handle("GET "+p+"/groups", a.listGroups)
	r.Handle("PUT "+p+"/groups/{group}/members/{user}", a.addMember)
	r.Handle("DELETE "+p+"/groups/{group}/members/{user}", a.removeMember)
	r.Handle("PUT "+p+"/groups/{group}/quota", a.setGroupQuotaRoute)
	r.Handle("GET "+p+"/audit", a.auditLogRoute)
	r.Handle("GET "+p+"/audit/verify", a.verifyAuditRoute)
}

func (a *Access) listTokens(w http.ResponseWriter, r *http.Request) error {
	ts, err := a.Tokens(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ts)
}

func (a *Access) createTokenRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.TokenPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Object("tokens", p.Name)
	t, err := a.CreateToken(r.Context(), p.Name, p.E2B)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, t)
}

func (a *Access) revokeTokenRoute(w http.ResponseWriter, r *http.Request) error {
	if err := a.RevokeToken(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Access) listKeys(w http.ResponseWriter, r *http.Request) error {
	ks, err := a.Keys(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, ks)
}

func (a *Access) addKeyRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.KeyPost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	audit.From(r.Context()).Object("keys", p.Name)
	k, err := a.AddKey(r.Context(), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusCreated, k)
}

func (a *Access) removeKeyRoute(w http.ResponseWriter, r *http.Request) error {
	if err := a.RemoveKey(r.Context(), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Access) listUsers(w http.ResponseWriter, r *http.Request) error {
	us, err := a.Users(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, us)
}

func (a *Access) inviteUser(w http.ResponseWriter, r *http.Request) error {
	var p api.InvitePost
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	inv, err := a.Invite(r.Context(), p)
	if err != nil {
		return err
	}
	if a.URL != "" {
		inv.URL = a.URL + "/invite/" + inv.Token
	}
	return route.WriteJSON(w, http.StatusCreated, inv)
}

func (a *Access) listInvites(w http.ResponseWriter, r *http.Request) error {
	is, err := a.Invites(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, is)
}

func (a *Access) revokeInviteRoute(w http.ResponseWriter, r *http.Request) error {
	if err := a.RevokeInvite(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Access) removeUserRoute(w http.ResponseWriter, r *http.Request) error {
	if err := a.RemoveUser(r.Context(), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// GET /v1/users/{user}/quota: a user's quota and use (a member: their
// own).
func (a *Access) getQuota(w http.ResponseWriter, r *http.Request) error {
	q, err := a.Quota(r.Context(), r.PathValue("user"))
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, q)
}

// PUT /v1/users/{user}/quota: change a member's quota (the owner's).
func (a *Access) setQuotaRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.QuotaPut
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	b, _ := json.Marshal(p)
	audit.From(r.Context()).Note("set", json.RawMessage(b))
	q, err := a.SetQuota(r.Context(), r.PathValue("user"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, q)
}

// groups lists the groups (the owner's and admins').
func (a *Access) listGroups(w http.ResponseWriter, r *http.Request) error {
	gs, err := a.Groups(r.Context())
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, gs)
}

func (a *Access) addMember(w http.ResponseWriter, r *http.Request) error {
	audit.From(r.Context()).Note("user", r.PathValue("user"))
	if err := a.AddToGroup(r.Context(), r.PathValue("group"), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Access) removeMember(w http.ResponseWriter, r *http.Request) error {
	audit.From(r.Context()).Note("user", r.PathValue("user"))
	if err := a.RemoveFromGroup(r.Context(), r.PathValue("group"), r.PathValue("user")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (a *Access) setGroupQuotaRoute(w http.ResponseWriter, r *http.Request) error {
	var p api.QuotaPut
	if err := route.Decode(r, &p); err != nil {
		return err
	}
	g, err := a.SetGroupQuota(r.Context(), r.PathValue("group"), p)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, g)
}

// GET /v1/audit: the entries the caller may see, oldest first.
func (a *Access) auditLogRoute(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.AuditFilter{Box: q.Get("box"), User: q.Get("user"), Action: q.Get("action"), Limit: 1000}
	if v := q.Get("since"); v != "" {
		t, err := api.ParseSince(v, time.Now())
		if err != nil {
			return err
		}
		f.Since = t
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return &api.Error{Code: api.CodeInvalid, Field: "after", Message: "after is an entry's number"}
		}
		f.After = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return &api.Error{Code: api.CodeInvalid, Field: "limit", Message: "limit is from 1 to 10000"}
		}
		f.Limit = n
	}
	es, err := a.AuditLog(r.Context(), f)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, es)
}

// GET /v1/audit/verify: the chain checked (the owner's), against the
// head the client saw at its last check (seen=SEQ:HASH) too.
func (a *Access) verifyAuditRoute(w http.ResponseWriter, r *http.Request) error {
	var seen *api.AuditMark
	if v := r.URL.Query().Get("seen"); v != "" {
		m, err := api.ParseAuditMark(v)
		if err != nil {
			return err
		}
		seen = &m
	}
	c, err := a.VerifyAudit(r.Context(), seen)
	if err != nil {
		return err
	}
	return route.WriteJSON(w, http.StatusOK, c)
}
