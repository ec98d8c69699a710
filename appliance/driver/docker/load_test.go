package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver/docker"
)

// smallImage is an archive of one image as docker save writes it (the
// legacy layout): a layer with one file, its config, and a manifest that
// names it tags.
func smallImage(t *testing.T, file string, tags ...string) (archive []byte, id string) {
	t.Helper()
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	lw.WriteHeader(&tar.Header{Name: file, Typeflag: tar.TypeReg, Mode: 0o644, Size: 6})
	lw.Write([]byte("owned\n"))
	lw.Close()
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	cfg, _ := json.Marshal(map[string]any{"architecture": "amd64", "os": "linux", "config": map[string]any{"Cmd": []string{"/bin/sh"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + sum(layer.Bytes())}}})
	id = sum(cfg)
	m, _ := json.Marshal([]map[string]any{{"Config": id + ".json", "RepoTags": tags, "Layers": []string{"l1/layer.tar"}}})
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		body []byte
	}{{"l1/layer.tar", layer.Bytes()}, {id + ".json", cfg}, {"manifest.json", m}} {
		tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))})
		tw.Write(f.body)
	}
	tw.Close()
	return out.Bytes(), "sha256:" + id
}

func imageID(t *testing.T, ref string) string {
	t.Helper()
	out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Id}}", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// A move's archive comes from another server, which may have been taken
// over. One that names its image after an image boxes are made from (and
// after the snapshot it ships) leaves that name on the image it was on;
// the snapshot is named, and only it.
func TestAttackMoveArchiveRetagsAnImage(t *testing.T) {
	var inst string
	d, image := engine(t, func(c *docker.Config) { inst = c.Instance })
	ctx := context.Background()
	victim := inst + "-boximage:latest"
	if out, err := exec.Command("docker", "tag", image, victim).CombinedOutput(); err != nil {
		t.Fatalf("docker tag: %v %s", err, out)
	}
	before := imageID(t, victim)
	archive, forged := smallImage(t, "pwned", victim, inst+"-snapshot:s1", inst+"-other:latest")
	t.Cleanup(func() {
		exec.Command("docker", "rmi", "-f", victim, inst+"-snapshot:s1", inst+"-other:latest", forged).Run()
	})
	if err := d.LoadSnapshots(ctx, []string{"s1"}, bytes.NewReader(archive)); err != nil {
		t.Fatal(err)
	}
	if got := imageID(t, victim); got != before {
		t.Fatalf("%s is image %s after the load, was %s", victim, got, before)
	}
	if got := imageID(t, inst+"-snapshot:s1"); got != forged {
		t.Fatalf("the snapshot is image %q, want %s", got, forged)
	}
	if got := imageID(t, inst+"-other:latest"); got == forged {
		t.Fatal("the archive named another image")
	}
	// An archive that does not ship the snapshot asked for loads, names
	// nothing, and says so.
	other, _ := smallImage(t, "other", victim)
	if err := d.LoadSnapshots(ctx, []string{"s2"}, bytes.NewReader(other)); err == nil || !strings.Contains(err.Error(), "snapshot s2 is not in") {
		t.Fatalf("an archive without the snapshot: %v", err)
	}
	if got := imageID(t, victim); got != before {
		t.Fatalf("%s is image %s after the second load, was %s", victim, got, before)
	}
}
