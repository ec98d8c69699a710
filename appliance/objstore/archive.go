package objstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Chunk bounds: a boundary is where the rolling hash's low bits are zero
// (about one in a MiB), but never before minChunk nor after maxChunk.
const (
	minChunk  = 256 << 10
	maxChunk  = 4 << 20
	chunkMask = 1<<20 - 1
)

// gear is the rolling hash's table: fixed for ever, as chunks cut with
// another would share nothing with those already stored.
var gear = func() (t [256]uint64) {
	for i := range t {
		h := sha256.Sum256([]byte{'p', 'a', 'd', 'd', 'o', 'c', 'k', byte(i)})
		t[i] = binary.LittleEndian.Uint64(h[:8])
	}
	return t
}()

// cut returns the length of the first chunk of b: up to its first
// boundary, or maxChunk bytes, or all of b (the caller passes fewer than
// maxChunk bytes only at the end of its input).
func cut(b []byte) int {
	if len(b) <= minChunk {
		return len(b)
	}
	n := min(len(b), maxChunk)
	var h uint64
	for i := minChunk; i < n; i++ {
		h = h<<1 + gear[b[i]]
		if h&chunkMask == 0 {
			return i + 1
		}
	}
	return n
}

// Manifest is a stored archive: its chunks, in order.
type Manifest struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Made    time.Time `json:"made"`
	Chunks  []Chunk   `json:"chunks"`
}

// Chunk is one piece of an archive: the SHA-256 of its bytes, and their count.
type Chunk struct {
	Hash string `json:"h"`
	Size int64  `json:"n"`
}

// Sent is what a Put sent.
type Sent struct {
	Bytes, Chunks int64 // the archive's
	New, NewBytes int64 // of those, the chunks the store did not have yet
}

func manifestKey(name string) string { return "archives/" + name + ".json" }
func chunkKey(h string) string       { return "chunks/" + h[:2] + "/" + h }

// uploaders is how many chunks are sent at once.
const uploaders = 4

// PutArchive stores what r holds as the archive name, cut into chunks;
// chunks the store already has are not sent again. The manifest is
// written last, once every chunk it names is stored, and only if the
// whole's SHA-256 is want (hex; "" takes any).
func (s *Store) PutArchive(ctx context.Context, name string, r io.Reader, want string) (Manifest, Sent, error) {
	m := Manifest{Version: 1, Name: name}
	var sent Sent
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type job struct {
		hash string
		data []byte
	}
	jobs := make(chan job, uploaders)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range uploaders {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				if _, ok := s.known.Load(j.hash); ok {
					continue
				}
				have, err := s.Has(ctx, chunkKey(j.hash))
				if err == nil && !have {
					err = s.Put(ctx, chunkKey(j.hash), bytes.NewReader(j.data), int64(len(j.data)))
					if err == nil {
						mu.Lock()
						sent.New++
						sent.NewBytes += int64(len(j.data))
						mu.Unlock()
					}
				}
				if err != nil {
					cancel(err)
					continue
				}
				s.known.Store(j.hash, true)
			}
		})
	}
	whole := sha256.New()
	buf := make([]byte, 0, 2*maxChunk)
	seen := map[string]bool{}
	eof := false
	var rerr error
	for !eof || len(buf) > 0 {
		for !eof && len(buf) < maxChunk {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				eof = true
			} else if err != nil {
				rerr, eof = err, true
			}
		}
		if rerr != nil || ctx.Err() != nil || len(buf) == 0 {
			break
		}
		n := cut(buf)
		sum := sha256.Sum256(buf[:n])
		h := hex.EncodeToString(sum[:])
		whole.Write(buf[:n])
		m.Chunks = append(m.Chunks, Chunk{Hash: h, Size: int64(n)})
		m.Size += int64(n)
		if !seen[h] {
			seen[h] = true
			data := make([]byte, n)
			copy(data, buf[:n])
			select {
			case jobs <- job{h, data}:
			case <-ctx.Done():
			}
		}
		buf = buf[:copy(buf, buf[n:])]
	}
	close(jobs)
	wg.Wait()
	if rerr != nil {
		return m, sent, fmt.Errorf("reading what to store: %w", rerr)
	}
	if err := context.Cause(ctx); err != nil {
		return m, sent, err
	}
	m.SHA256 = hex.EncodeToString(whole.Sum(nil))
	if want != "" && m.SHA256 != want {
		return m, sent, fmt.Errorf("%s: what was read is not what it should be (sha256 %s, want %s)", name, m.SHA256, want)
	}
	m.Made = time.Now().UTC()
	sent.Bytes, sent.Chunks = m.Size, int64(len(m.Chunks))
	js, err := json.Marshal(m)
	if err != nil {
		return m, sent, err
	}
	return m, sent, s.Put(ctx, manifestKey(name), bytes.NewReader(js), int64(len(js)))
}

// Archive reads an archive's manifest.
func (s *Store) Archive(ctx context.Context, name string) (Manifest, error) {
	var m Manifest
	b, err := s.Get(ctx, manifestKey(name))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Version != 1 {
		return m, fmt.Errorf("the manifest of %s in the %s cannot be read (version %d): %v", name, s.Where, m.Version, err)
	}
	for _, c := range m.Chunks {
		if len(c.Hash) != 64 || strings.Trim(c.Hash, "0123456789abcdef") != "" || c.Size <= 0 || c.Size > maxChunk {
			return m, fmt.Errorf("the manifest of %s in the %s names a bad chunk %q", name, s.Where, c.Hash)
		}
	}
	return m, nil
}

// readers is how many chunks are read ahead.
const readers = 4

// OpenArchive streams an archive's bytes in order, each chunk checked
// against its hash and the whole against the manifest's: a chunk missing,
// changed or cut off ends the stream with an error, never with other bytes.
func (s *Store) OpenArchive(ctx context.Context, name string) (io.ReadCloser, Manifest, error) {
	m, err := s.Archive(ctx, name)
	if err != nil {
		return nil, m, err
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	type got struct {
		data []byte
		err  error
	}
	slots := make(chan chan got, readers)
	go func() {
		defer close(slots)
		for _, c := range m.Chunks {
			ch := make(chan got, 1)
			select {
			case slots <- ch:
			case <-ctx.Done():
				return
			}
			go func(c Chunk) {
				b, err := s.Get(ctx, chunkKey(c.Hash))
				if err == nil {
					sum := sha256.Sum256(b)
					if int64(len(b)) != c.Size || hex.EncodeToString(sum[:]) != c.Hash {
						err = fmt.Errorf("chunk %s of %s in the %s does not hold what its name says", c.Hash[:12], name, s.Where)
					}
				}
				ch <- got{b, err}
			}(c)
		}
	}()
	go func() {
		whole := sha256.New()
		for ch := range slots {
			g := <-ch
			if g.err == nil {
				whole.Write(g.data)
				_, g.err = pw.Write(g.data)
			}
			if g.err != nil {
				cancel()
				pw.CloseWithError(fmt.Errorf("reading %s from the object store: %w", name, g.err))
				return
			}
		}
		if ctx.Err() == nil && hex.EncodeToString(whole.Sum(nil)) != m.SHA256 {
			pw.CloseWithError(fmt.Errorf("%s read from the %s is not what was stored", name, s.Where))
			return
		}
		pw.CloseWithError(ctx.Err())
	}()
	return readCloser{pr, cancel}, m, nil
}

type readCloser struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r readCloser) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// HasArchive says whether an archive's manifest is stored.
func (s *Store) HasArchive(ctx context.Context, name string) (bool, error) {
	return s.Has(ctx, manifestKey(name))
}

// Archives lists the stored archives' names.
func (s *Store) Archives(ctx context.Context) ([]string, error) {
	objs, err := s.List(ctx, "archives/")
	var out []string
	for _, o := range objs {
		if n, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, "archives/"), ".json"); ok {
			out = append(out, n)
		}
	}
	return out, err
}

// Sweep removes the archives keep does not want, then the chunks no
// archive names that are older than grace (a PutArchive under way stores
// its chunks before its manifest: grace must outlast one).
func (s *Store) Sweep(ctx context.Context, keep func(name string) bool, grace time.Duration) (removed int, err error) {
	names, err := s.Archives(ctx)
	if err != nil {
		return 0, err
	}
	used := map[string]bool{}
	for _, n := range names {
		if !keep(n) {
			if err := s.Delete(ctx, manifestKey(n)); err != nil {
				return removed, err
			}
			continue
		}
		m, err := s.Archive(ctx, n)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return removed, err
		}
		for _, c := range m.Chunks {
			used[c.Hash] = true
		}
	}
	objs, err := s.List(ctx, "chunks/")
	if err != nil {
		return removed, err
	}
	for _, o := range objs {
		h := o.Key[strings.LastIndexByte(o.Key, '/')+1:]
		if used[h] || time.Since(o.Modified) < grace {
			continue
		}
		if err := s.Delete(ctx, o.Key); err != nil {
			return removed, err
		}
		s.known.Delete(h)
		removed++
	}
	return removed, nil
}
