package api

import (
	"strings"
	"testing"
)

// A bucket mount is checked where it is declared: its bucket and
// prefix, where the box sees it (never a system folder), its secret's
// name, its endpoint; the form 'new --mount' takes reads into the same.
func TestBucketMounts(t *testing.T) {
	good := BucketMount{URL: "s3://team-data/reports/2026/", To: "/data", Secret: "KEYS", Endpoint: "https://store.example.org:9000", Region: "eu-west-1"}
	if err := ValidBucketMount(good); err != nil {
		t.Fatal(err)
	}
	if b, p, err := BucketOf(good.URL); b != "team-data" || p != "reports/2026" || err != nil {
		t.Fatalf("BucketOf: %q %q %v", b, p, err)
	}
	for _, c := range []struct {
		mod  func(*BucketMount)
		want string
	}{
		{func(m *BucketMount) { m.URL = "https://team-data" }, "s3://BUCKET"},
		{func(m *BucketMount) { m.URL = "s3://ab" }, "3 to 63"},
		{func(m *BucketMount) { m.URL = "s3://Team" }, "lowercase"},
		{func(m *BucketMount) { m.URL = "s3://-team" }, "starting and ending"},
		{func(m *BucketMount) { m.URL = "s3://team//x" }, "clean path segments"},
		{func(m *BucketMount) { m.URL = "s3://team/a/../b" }, "clean path segments"},
		{func(m *BucketMount) { m.To = "" }, "say where"},
		{func(m *BucketMount) { m.To = "data" }, "clean absolute path"},
		{func(m *BucketMount) { m.To = "/data/../etc" }, "clean absolute path"},
		{func(m *BucketMount) { m.To = "/" }, "clean absolute path"},
		{func(m *BucketMount) { m.To = "/proc/x" }, "system's own (/proc)"},
		{func(m *BucketMount) { m.To = "/var/lib/docker" }, "system's own (/var)"},
		{func(m *BucketMount) { m.To = "/usr" }, "system's own (/usr)"},
		{func(m *BucketMount) { m.Secret = "" }, "name the secret"},
		{func(m *BucketMount) { m.Secret = "a-b" }, "cannot name a secret"},
		{func(m *BucketMount) { m.Endpoint = "ftp://x" }, "http(s)://HOST"},
		{func(m *BucketMount) { m.Endpoint = "http://user:pw@x" }, "http(s)://HOST"},
		{func(m *BucketMount) { m.Endpoint = "http://x/path" }, "http(s)://HOST"},
		{func(m *BucketMount) { m.Region = "EU" }, "region"},
	} {
		m := good
		c.mod(&m)
		if err := ValidBucketMount(m); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", m, err, c.want)
		}
	}
	if err := ValidBuckets([]BucketMount{good, {URL: "s3://other", To: "/data/in", Secret: "K"}}, nil); err == nil || !strings.Contains(err.Error(), "another mount") {
		t.Errorf("a bucket inside another: %v", err)
	}
	if err := ValidBuckets([]BucketMount{good}, map[string]bool{"/data": true}); err == nil {
		t.Error("a bucket where a drive is")
	}
	m, err := ParseBucketMount("s3://team-data/x,to=/srv/x,secret=KEYS,ro,endpoint=http://127.0.0.1:9000,region=us-east-1")
	if err != nil || m != (BucketMount{URL: "s3://team-data/x", To: "/srv/x", Secret: "KEYS", ReadOnly: true, Endpoint: "http://127.0.0.1:9000", Region: "us-east-1"}) {
		t.Fatalf("ParseBucketMount: %+v %v", m, err)
	}
	for _, bad := range []string{"s3://team-data,to=/x", "s3://team-data,to=/x,secret=K,rw", "s3://team-data,secret=K"} {
		if _, err := ParseBucketMount(bad); err == nil {
			t.Errorf("ParseBucketMount(%q) took it", bad)
		}
	}
}
