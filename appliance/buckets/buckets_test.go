package buckets

import (
	"slices"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/store"
)

// rclone gets the bucket's store and keys, and nothing else of
// paddockd's environment (where the object store's own keys may be).
func TestRcloneEnv(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "paddockd-own")
	t.Setenv("RCLONE_CONFIG_OTHER_TYPE", "local")
	m := store.BucketMount{URL: "s3://team/reports", To: "/data", Secret: "K", Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1"}
	env := rcloneEnv(m, "AKID", "SECRET", "/state/rclone.conf")
	for _, want := range []string{"RCLONE_CONFIG_BKT_ACCESS_KEY_ID=AKID", "RCLONE_CONFIG_BKT_SECRET_ACCESS_KEY=SECRET", "RCLONE_CONFIG_BKT_ENDPOINT=http://127.0.0.1:9000",
		"RCLONE_CONFIG_BKT_REGION=eu-west-1", "RCLONE_CONFIG_BKT_ENV_AUTH=false", "RCLONE_CONFIG=/state/rclone.conf"} {
		if !slices.Contains(env, want) {
			t.Errorf("rclone's environment lacks %s: %v", want, env)
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "paddockd-own") || strings.HasPrefix(kv, "RCLONE_CONFIG_OTHER") {
			t.Errorf("paddockd's environment reached rclone: %s", kv)
		}
	}
	if r := remoteOf(m); r != "bkt:team/reports" {
		t.Errorf("remote %q", r)
	}
	if r := remoteOf(store.BucketMount{URL: "s3://team"}); r != "bkt:team" {
		t.Errorf("remote %q", r)
	}
}

func TestKeysAndMountinfo(t *testing.T) {
	for v, ok := range map[string]bool{"AK:SK": true, "AK:SK\n": true, "AK": false, ":SK": false, "AK:": false, "AK:S\nK": false} {
		if _, _, got := keysOf([]byte(v)); got != ok {
			t.Errorf("keysOf(%q) = %v", v, got)
		}
	}
	if got := unescape(`/var/lib/my\040state\134x`); got != `/var/lib/my state\x` {
		t.Errorf("unescape: %q", got)
	}
	b := store.Box{Name: "web", UID: "abc123"}
	if BindName(b, 1) != "abc123-1" || BindName(store.Box{Name: "old"}, 0) != "old-0" {
		t.Error("bind names")
	}
}
