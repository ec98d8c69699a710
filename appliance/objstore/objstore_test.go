package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/objstore"
	"github.com/paddock-dev/paddock/testbed/harness"
)

// open starts a real S3 server and opens paddockd's store on it.
func open(t *testing.T) (*objstore.Store, *harness.S3) {
	t.Helper()
	srv := harness.StartS3(t)
	st, err := objstore.Open(objstore.Config{Endpoint: srv.Endpoint, Bucket: srv.Bucket, AccessKey: srv.AccessKey, SecretKey: srv.SecretKey}, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, srv
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func readAll(t *testing.T, st *objstore.Store, name string) ([]byte, error) {
	t.Helper()
	rc, _, err := st.OpenArchive(context.Background(), name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// An archive comes back byte for byte; a second one that differs by a
// change and an insertion sends about what changed, not the whole.
func TestArchiveSendsWhatChanged(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	first := randomBytes(1, 40<<20)
	_, sent, err := st.PutArchive(ctx, "a", bytes.NewReader(first), "")
	if err != nil {
		t.Fatal(err)
	}
	if sent.NewBytes != int64(len(first)) || sent.Bytes != int64(len(first)) {
		t.Fatalf("the first archive: sent %+v, want all %d bytes", sent, len(first))
	}
	got, err := readAll(t, st, "a")
	if err != nil || !bytes.Equal(got, first) {
		t.Fatalf("read back %d bytes (err %v), want the %d stored", len(got), err, len(first))
	}

	// 3 MiB changed at 10 MiB, 100 bytes inserted at 30 MiB.
	second := bytes.Clone(first)
	copy(second[10<<20:], randomBytes(2, 3<<20))
	second = append(second[:30<<20:30<<20], append(randomBytes(3, 100), second[30<<20:]...)...)
	_, sent, err = st.PutArchive(ctx, "b", bytes.NewReader(second), "")
	if err != nil {
		t.Fatal(err)
	}
	// Each changed place costs at most the chunks around it.
	if limit := int64(3<<20 + 100 + 4*4<<20); sent.NewBytes > limit || sent.NewBytes < 3<<20 {
		t.Fatalf("the second archive sent %d new bytes of %d, want between 3 MiB and %d", sent.NewBytes, sent.Bytes, limit)
	}
	t.Logf("second archive: %d of %d bytes sent (%d of %d chunks)", sent.NewBytes, sent.Bytes, sent.New, sent.Chunks)
	got, err = readAll(t, st, "b")
	if err != nil || !bytes.Equal(got, second) {
		t.Fatalf("read back %d bytes (err %v), want the %d stored", len(got), err, len(second))
	}
	// The same again sends nothing.
	if _, sent, err = st.PutArchive(ctx, "c", bytes.NewReader(second), ""); err != nil || sent.NewBytes != 0 {
		t.Fatalf("the same bytes again sent %d (err %v)", sent.NewBytes, err)
	}
}

// A chunk changed in the store, or gone, ends the read with an error:
// never with other bytes.
func TestArchiveReadChecksChunks(t *testing.T) {
	st, srv := open(t)
	ctx := context.Background()
	data := randomBytes(4, 6<<20)
	m, _, err := st.PutArchive(ctx, "a", bytes.NewReader(data), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Chunks) < 2 {
		t.Fatalf("want several chunks, got %d", len(m.Chunks))
	}
	var path string
	filepath.Walk(filepath.Join(srv.Dir, srv.Bucket), func(p string, fi os.FileInfo, err error) error {
		if err == nil && filepath.Base(p) == m.Chunks[1].Hash {
			path = p
		}
		return nil
	})
	if path == "" {
		t.Fatal("the chunk's file is not in the server's folder")
	}
	b, _ := os.ReadFile(path)
	b[100] ^= 1
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, st, "a"); err == nil || !strings.Contains(err.Error(), "does not hold what its name says") {
		t.Fatalf("a changed chunk read as %d bytes, err %v", len(got), err)
	}
	os.Remove(path)
	if got, err := readAll(t, st, "a"); err == nil {
		t.Fatalf("a missing chunk read as %d bytes", len(got))
	}
	if _, _, err := st.OpenArchive(ctx, "nothing"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("an archive never stored: %v", err)
	}
}

// A store cut off in the middle of a put fails it with an error, and
// leaves no manifest: an archive is there whole or not at all.
func TestArchiveCutOff(t *testing.T) {
	st, srv := open(t)
	ctx := context.Background()
	data := randomBytes(5, 64<<20)
	r := &slowReader{r: bytes.NewReader(data), at: 20 << 20, then: srv.Stop}
	tctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, _, err := st.PutArchive(tctx, "a", r, ""); err == nil {
		t.Fatal("a put whose store went away succeeded")
	} else {
		t.Logf("the put failed: %v", err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if ok, err := st.HasArchive(ctx, "a"); err != nil || ok {
		t.Fatalf("after the failed put the archive is there: %v %v", ok, err)
	}
	// Bytes that are not what the caller said they are: no archive either.
	if _, _, err := st.PutArchive(ctx, "a", bytes.NewReader(data), strings.Repeat("0", 64)); err == nil || !strings.Contains(err.Error(), "not what it should be") {
		t.Fatalf("a put of other bytes than wanted: %v", err)
	}
	if ok, err := st.HasArchive(ctx, "a"); err != nil || ok {
		t.Fatalf("after a put of other bytes the archive is there: %v %v", ok, err)
	}
	if _, _, err := st.PutArchive(ctx, "a", bytes.NewReader(data), ""); err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, st, "a"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (err %v)", len(got), err)
	}
}

// slowReader calls then once at offset at.
type slowReader struct {
	r    io.Reader
	n    int64
	at   int64
	then func()
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.then != nil && s.n >= s.at {
		s.then()
		s.then = nil
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	return n, err
}

// Sweep removes the archives not wanted and the chunks only they named.
func TestSweep(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	a, b := randomBytes(6, 5<<20), randomBytes(7, 5<<20)
	if _, _, err := st.PutArchive(ctx, "a", bytes.NewReader(a), ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.PutArchive(ctx, "b", bytes.NewReader(b), ""); err != nil {
		t.Fatal(err)
	}
	n, err := st.Sweep(ctx, func(name string) bool { return name == "a" }, 0)
	if err != nil || n == 0 {
		t.Fatalf("sweep removed %d chunks (err %v)", n, err)
	}
	if got, err := readAll(t, st, "a"); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("the archive kept reads %d bytes, err %v", len(got), err)
	}
	if ok, _ := st.HasArchive(ctx, "b"); ok {
		t.Fatal("the archive not wanted is still there")
	}
	// What is left is what a names.
	if _, sent, err := st.PutArchive(ctx, "b2", bytes.NewReader(b), ""); err != nil || sent.NewBytes != int64(len(b)) {
		t.Fatalf("b's chunks after the sweep: sent %d of %d (err %v)", sent.NewBytes, len(b), err)
	}
}
