// Package objstore is paddockd's client of one S3-compatible object store
// (the owner's: AWS, R2, MinIO, Ceph, SeaweedFS, Garage, ...), configured
// under [object_store] in paddock.toml, and the content-addressed archives
// it keeps there.
//
// An archive (a snapshot's images, as the engine saves them) is cut into
// chunks at boundaries found by the content itself (a rolling hash, so
// that bytes inserted or changed move only the chunks around them); each
// chunk is an object named by its SHA-256, stored once whoever refers to
// it, and the archive is a manifest listing its chunks in order. A second
// snapshot of a box sends the chunks that changed; forks and boxes made
// from one image share theirs. A manifest is written last: one that
// exists names only chunks that were all stored before it.
//
// The store's keys stay in paddockd: nothing of them enters a box, and a
// box's own traffic to the store's address obeys its egress policy like
// any other.
package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says where the store is and how paddockd signs in to it.
type Config struct {
	// Endpoint is the store's URL: https://host[:port] (http:// only for a
	// store on this machine or a private network).
	Endpoint string `koanf:"endpoint"`
	// Bucket holds Paddock's objects, under Prefix.
	Bucket string `koanf:"bucket"`
	// Prefix is put before every object's name (default: paddock/INSTANCE/).
	Prefix string `koanf:"prefix"`
	// Region is the bucket's region (default us-east-1).
	Region string `koanf:"region"`
	// AccessKey and SecretKey (or SecretKeyFile, read at start) sign
	// the requests.
	AccessKey     string `koanf:"access_key"`
	SecretKey     string `koanf:"secret_key"`
	SecretKeyFile string `koanf:"secret_key_file"`
	// CAFile adds authorities (PEM) the store's certificate may be signed
	// by, beside the system's.
	CAFile string `koanf:"ca_file"`
}

// Enabled says whether a store is configured.
func (c Config) Enabled() bool { return c.Endpoint != "" }

// Check says what is wrong with a configured store's settings.
func (c Config) Check() error {
	if !c.Enabled() {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("object_store.endpoint %q: want http(s)://host[:port]", c.Endpoint)
	}
	if c.Bucket == "" {
		return errors.New("object_store.bucket is not set")
	}
	if c.AccessKey == "" || (c.SecretKey == "" && c.SecretKeyFile == "") {
		return errors.New("object_store: access_key and secret_key (or secret_key_file) are needed")
	}
	return nil
}

// Store is the configured bucket, under its prefix.
type Store struct {
	c      *minio.Client
	bucket string
	prefix string
	// known are chunks stored already (by hash), not asked for again.
	known sync.Map
	// Where says where the store is, for messages (no keys).
	Where string
}

// Open makes the store's client; nothing is asked of the store yet.
func Open(cfg Config, instance string) (*Store, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	secret := cfg.SecretKey
	if cfg.SecretKeyFile != "" {
		b, err := os.ReadFile(cfg.SecretKeyFile)
		if err != nil {
			return nil, fmt.Errorf("object_store.secret_key_file: %w", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	u, _ := url.Parse(cfg.Endpoint)
	tr, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	tr.Proxy = nil // the store is reached straight, whatever the environment says
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("object_store.ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("object_store.ca_file %s holds no certificate", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, secret, ""),
		Secure:       u.Scheme == "https",
		Region:       region,
		Transport:    tr,
		BucketLookup: minio.BucketLookupPath,
		MaxRetries:   5,
	})
	if err != nil {
		return nil, fmt.Errorf("object_store: %w", err)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = "paddock/" + instance + "/"
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return &Store{c: c, bucket: cfg.Bucket, prefix: prefix, Where: fmt.Sprintf("s3 bucket %s at %s", cfg.Bucket, u.Host)}, nil
}

// Check asks the store whether the bucket is there and the keys open it.
func (s *Store) Check(ctx context.Context) error {
	ok, err := s.c.BucketExists(ctx, s.bucket)
	if err != nil {
		return s.wrap("checking the bucket", err)
	}
	if !ok {
		return fmt.Errorf("the %s: no such bucket", s.Where)
	}
	return nil
}

// ErrNotFound is an object the store does not have.
var ErrNotFound = errors.New("not in the object store")

func (s *Store) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if r := minio.ToErrorResponse(err); r.StatusCode == http.StatusNotFound || r.Code == "NoSuchKey" {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s in the %s: %w", what, s.Where, err)
}

// Put stores an object of size bytes (-1: not known).
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	_, err := s.c.PutObject(ctx, s.bucket, s.prefix+key, r, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream", DisableMultipart: size >= 0 && size <= 64<<20,
	})
	return s.wrap("storing "+key, err)
}

// Get reads an object whole.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	o, err := s.c.GetObject(ctx, s.bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.wrap("reading "+key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	return b, s.wrap("reading "+key, err)
}

// Has says whether the store holds an object.
func (s *Store) Has(ctx context.Context, key string) (bool, error) {
	_, err := s.c.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if err = s.wrap("looking for "+key, err); errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return false, err
}

// Delete removes an object (one that is not there is not an error).
func (s *Store) Delete(ctx context.Context, key string) error {
	err := s.wrap("removing "+key, s.c.RemoveObject(ctx, s.bucket, s.prefix+key, minio.RemoveObjectOptions{}))
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Object is one listed object.
type Object struct {
	Key      string // without the store's prefix
	Size     int64
	Modified time.Time
}

// List lists the objects whose names start with prefix.
func (s *Store) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s.wrap("listing "+prefix, o.Err)
		}
		out = append(out, Object{Key: strings.TrimPrefix(o.Key, s.prefix), Size: o.Size, Modified: o.LastModified})
	}
	return out, nil
}
