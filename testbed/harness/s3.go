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
	Tool(t, "versitygw")
	s, err := NewS3(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// NewS3 starts an S3 server over a folder in dir (its log beside it) with
// its bucket made; Close stops it.
func NewS3(dir string) (*S3, error) {
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		return nil, fmt.Errorf("no versitygw (testbed/s3.sh installs it): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &S3{Endpoint: "http://" + addr, Bucket: "paddock-test", AccessKey: "testbed-" + randHex(4),
		SecretKey: randHex(16), Dir: filepath.Join(dir, "s3"), addr: addr, bin: bin}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	if s.log, err = os.Create(filepath.Join(dir, "versitygw.log")); err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		s.Close()
		return nil, err
	}
	c, err := s.Client()
	if err == nil {
		err = c.MakeBucket(context.Background(), s.Bucket, minio.MakeBucketOptions{})
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("making the test bucket: %w", err)
	}
	return s, nil
}

// Close stops the server for good.
func (s *S3) Close() {
	s.Stop()
	s.log.Close()
}

// Start starts the server (again, after Stop) on its address and folder,
// and waits until it answers.
func (s *S3) Start() error {
	// On every address of this machine: the box network's gateway too,
	// where a box would look for it (and must find it closed).
	_, port, _ := net.SplitHostPort(s.addr)
	s.cmd = exec.Command(s.bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", ":"+port, "posix", s.Dir)
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
