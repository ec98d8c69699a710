package dashboard

import (
	"errors"
	"net/http"

	"github.com/paddock-dev/paddock/appliance/audit"
	"github.com/paddock-dev/paddock/appliance/caller"
	"github.com/paddock-dev/paddock/appliance/sso"
)

// ssoCookie binds a single sign-on under way to the browser that began
// it: the callback's state must be this cookie's (a link to the callback
// planted in another browser signs no one in there).
func (p *Pages) ssoCookie() string {
	if p.Secure {
		return "__Host-paddock_sso"
	}
	return "paddock_sso"
}

// ssoStart sends the browser to the provider, with a state it keeps in a
// cookie and a PKCE challenge.
func (p *Pages) ssoStart(w http.ResponseWriter, r *http.Request) {
	if p.ssoLimited(w, r) {
		return
	}
	id := r.PathValue("id")
	if _, ok := p.Svc.SSO.Provider(id); !ok {
		p.render(w, http.StatusNotFound, "error", view{Title: "Not found", Error: "This server has no sign-in provider " + id + "."})
		return
	}
	redirect := p.serverURL(r) + "/sso/" + id + "/callback"
	to, state, err := p.Svc.SSO.Start(r.Context(), id, redirect, safeNext(r.URL.Query().Get("next")))
	if err != nil {
		p.Log.Error("sso start", "provider", id, "err", err)
		p.render(w, http.StatusBadGateway, "error", view{Title: "Sign-in provider unavailable", Error: err.Error()})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: p.ssoCookie(), Value: state, Path: "/", MaxAge: int(sso.StateTTL.Seconds()),
		HttpOnly: true, Secure: p.Secure, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// ssoCallback ends a sign-in: the state (once, this browser's), the
// code's exchange, the ID token's checks, the server's rules; then the
// user's session.
func (p *Pages) ssoCallback(w http.ResponseWriter, r *http.Request) {
	rec := audit.From(r.Context())
	id := r.PathValue("id")
	rec.Note("provider", id)
	http.SetCookie(w, &http.Cookie{Name: p.ssoCookie(), Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: p.Secure, SameSite: http.SameSiteLaxMode})
	prov, ok := p.Svc.SSO.Provider(id)
	if !ok {
		rec.Result("no such provider")
		p.render(w, http.StatusNotFound, "error", view{Title: "Not found", Error: "This server has no sign-in provider " + id + "."})
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		rec.Result("the provider refused: " + e)
		p.render(w, http.StatusForbidden, "error", view{Title: "Not signed in", Error: prov.Name + " did not sign you in: " + e + " " + q.Get("error_description")})
		return
	}
	var cookie string
	if c, err := r.Cookie(p.ssoCookie()); err == nil {
		cookie = c.Value
	}
	ident, next, err := p.Svc.SSO.Finish(r.Context(), id, q.Get("state"), cookie, q.Get("code"))
	if err != nil {
		rec.Result(err.Error())
		p.Log.Warn("failed sso sign-in", "provider", id, "addr", caller.Addr(r), "err", err)
		status := http.StatusBadRequest
		if !errors.Is(err, sso.ErrState) {
			status = http.StatusForbidden
		}
		p.render(w, status, "error", view{Title: "Not signed in", Error: "The sign-in did not complete: " + err.Error()})
		return
	}
	rec.Note("email", ident.Email)
	role, err := prov.Admit(ident)
	if err != nil {
		rec.Result(err.Error())
		p.Log.Warn("sso sign-in refused", "provider", id, "email", ident.Email, "addr", caller.Addr(r))
		p.render(w, http.StatusForbidden, "error", view{Title: "Not let in", Error: err.Error()})
		return
	}
	u, sess, err := p.Access.SignInSSO(r.Context(), ident, role)
	if err != nil {
		rec.Result(err.Error())
		p.render(w, http.StatusForbidden, "error", view{Title: "Not signed in", Error: err.Error()})
		return
	}
	p.Log.Info("login", "user", u.Name, "via", "sso:"+id, "addr", caller.Addr(r))
	rec.Who(u.Name, "sso:"+id)
	p.setSession(w, sess)
	http.Redirect(w, r, next, http.StatusSeeOther)
}
