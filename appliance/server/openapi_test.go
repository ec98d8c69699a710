package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/openapi"
	"github.com/paddock-dev/paddock/testbed/contract"
)

// The OpenAPI document is built from the real route table: every /v1
// route is in it, every Op has its route, the document is valid OpenAPI
// 3.1, and real answers of the server match it (checked by the validator
// on each exchange below, errors included).
func TestOpenAPIDocumentMatchesTheServer(t *testing.T) {
	ts, srv, svc := wired(t)
	doc, err := srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if extra := openapi.Unrouted(srv.Routes(), Ops()); len(extra) > 0 {
		t.Fatalf("documented routes the server lacks: %v", extra)
	}
	var d struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range srv.Routes() {
		method, path, _ := strings.Cut(r.Pattern, " ")
		if !strings.HasPrefix(path, "/v1/") {
			continue
		}
		n++
		if _, ok := d.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("%s is routed but not in the document", r.Pattern)
		}
	}
	t.Logf("%d /v1 routes, all documented", n)
	c, err := contract.New(doc)
	if err != nil {
		t.Fatal(err)
	}
	owner := addOwner(t, svc)
	hc := &http.Client{Transport: c.Transport(nil)}
	do := func(method, path, body string) int {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+owner)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, x := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/v1/whoami", "", 200},
		{"POST", "/v1/boxes", `{"name":"web","ttl":"1h","env":{"A":"1"}}`, 201},
		{"POST", "/v1/boxes", `{"ttl":"soon"}`, 400},
		{"GET", "/v1/boxes", "", 200},
		{"GET", "/v1/boxes/web", "", 200},
		{"GET", "/v1/boxes/nosuch", "", 404},
		{"PUT", "/v1/boxes/web/ttl", `{"ttl":"2h"}`, 200},
		{"POST", "/v1/boxes/web/snapshots", "", 201},
		{"GET", "/v1/boxes/web/snapshots", "", 200},
		{"POST", "/v1/boxes/web/fork", `{"name":"web2"}`, 201},
		{"POST", "/v1/boxes/web/stop", "", 200},
		{"POST", "/v1/boxes/web/start", "", 200},
		{"POST", "/v1/drives", `{"name":"cache"}`, 201},
		{"GET", "/v1/drives", "", 200},
		{"POST", "/v1/policies", `{"name":"reg","allow_domains":["example.test"]}`, 201},
		{"PUT", "/v1/policies/reg", `{"name":"reg","allow_cidrs":["10.9.0.0/16"]}`, 200},
		{"GET", "/v1/policies", "", 200},
		{"PUT", "/v1/boxes/web/policy", `{"policy":"reg"}`, 200},
		{"GET", "/v1/agents", "", 200},
		{"POST", "/v1/tokens", `{"name":"ci"}`, 201},
		{"GET", "/v1/tokens", "", 200},
		{"GET", "/v1/keys", "", 200},
		{"GET", "/v1/secrets", "", 200},
		{"GET", "/v1/users", "", 200},
		{"POST", "/v1/users/invites", `{"role":"member"}`, 201},
		{"POST", "/v1/plan", `{"spec":{"project":"p","boxes":[{"name":"pweb"}]}}`, 200},
		{"GET", "/v1/projects", "", 200},
		{"POST", "/v1/reconcile", "", 200},
		{"POST", "/v1/signin-links", `{"box":"web"}`, 201},
		{"GET", "/v1/boxes/web/screenshots", "", 200},
		{"GET", "/v1/openapi.json", "", 200},
		{"DELETE", "/v1/boxes/web2", "", 204},
	} {
		if got := do(x.method, x.path, x.body); got != x.want {
			t.Errorf("%s %s: %d, want %d", x.method, x.path, got, x.want)
		}
	}
	for _, f := range c.Failures() {
		t.Error(f)
	}
	t.Log(c.Summary())
}

var update = flag.Bool("update", false, "rewrite the SDKs' generated model files")

// The SDKs' models are generated from the document: a field added,
// renamed or retyped in package api changes the document, and this test
// fails until the SDK files are regenerated (-update) and the SDKs
// compile against them (tsc in the e2e SDK test).
func TestSDKModelsFollowTheDocument(t *testing.T) {
	_, srv, _ := wired(t)
	doc, err := srv.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		gen  func([]byte) ([]byte, error)
	}{
		{"../../sdk/typescript/src/models.ts", openapi.TypeScript},
		{"../../sdk/python/paddock/models.py", openapi.Python},
	} {
		want, err := f.gen(doc)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(f.path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(have, want) {
			t.Errorf("%s is not what the OpenAPI document gives: run go test ./appliance/server -run TestSDKModels -update", f.path)
		}
	}
}
