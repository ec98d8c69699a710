package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a real S3-compatible server on loopback: the Versity S3 gateway
// (versitygw, which testbed/s3.sh installs), serving a folder of the
// test's own, with one bucket made.
type S3 struct {
	Endpoint  string // http://127.0.0.1:PORT
	Bucket    string
	AccessKey string
	SecretKey string
	// Dir is the folder behind the server: the bucket is Dir/Bucket.
	Dir  string
	addr string
	bin  string
	log  *os.File
	cmd  *exec.Cmd
}

// StartS3 starts an S3 server for the test, stopped at its end.
func StartS3(t testing.TB) *S3 {
	t.Helper()
	bin := Tool(t, "versitygw")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &S3{Endpoint: "http://" + addr, Bucket: "paddock-test", AccessKey: "testbed-" + randHex(4),
		SecretKey: randHex(16), Dir: t.TempDir(), addr: addr, bin: bin}
	if s.log, err = os.Create(filepath.Join(t.TempDir(), "versitygw.log")); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(); s.log.Close() })
	c, err := s.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(context.Background(), s.Bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("making the test bucket: %v", err)
	}
	return s
}

// Start starts the server (again, after Stop) on its address and folder,
// and waits until it answers.
func (s *S3) Start() error {
	s.cmd = exec.Command(s.bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.addr, "posix", s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	for range 200 {
		if c, err := net.Dial("tcp", s.addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("versitygw did not answer on %s (its log: %s)", s.addr, s.log.Name())
}

// Stop kills the server: every connection to it is cut.
func (s *S3) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
		s.cmd = nil
	}
}

// Client is a client of the server, for the test's own looks.
func (s *S3) Client() (*minio.Client, error) {
	return minio.New(s.addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), BucketLookup: minio.BucketLookupPath})
}

// Config is paddock.toml's [object_store] for the server.
func (s *S3) Config() string {
	return fmt.Sprintf("[object_store]\nendpoint = %q\nbucket = %q\naccess_key = %q\nsecret_key = %q\n", s.Endpoint, s.Bucket, s.AccessKey, s.SecretKey)
}
