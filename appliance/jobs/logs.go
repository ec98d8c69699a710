package jobs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

func (jb *Jobs) jobsDir() string { return filepath.Join(jb.cfg.StateDir, "jobs") }

func (jb *Jobs) jobLog(id string) string { return filepath.Join(jb.jobsDir(), id+".log") }

// ForgetLogs removes the logs of jobs that went with a removed box.
func (jb *Jobs) ForgetLogs(ids []string) {
	for _, id := range ids {
		os.Remove(jb.jobLog(id) + ".1")
		if err := os.Remove(jb.jobLog(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			jb.log.Warn("removing a job log", "job", id, "err", err)
		}
	}
}

// MarkLost marks jobs that were running when the daemon last stopped as
// lost: their output stream is gone with the old process.
func (jb *Jobs) MarkLost() error {
	jobs, err := jb.store.ListJobs("", "running")
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := jb.store.EndJob(j.ID, "lost", nil, jb.core.Time()); err != nil {
			return err
		}
	}
	return nil
}

// jobLogWriter keeps a job's output within max bytes on disk, as its tail:
// the log is two segments, path.1 (older) and path (newer). When path holds
// max/2 bytes it becomes path.1 (the older segment goes) and a new path
// starts with a line that says how much output was dropped so far. Readers
// read path.1, then path; a follower that reaches the end of a segment
// that was moved away goes on in the new path.
type jobLogWriter struct {
	mu      sync.Mutex
	path    string
	max     int64
	f       *os.File
	size    int64 // of f
	old     int64 // of path.1
	dropped int64
}

func newJobLogWriter(path string, max int64) (*jobLogWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	return &jobLogWriter{path: path, max: max, f: f}, nil
}

func (w *jobLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.max <= 0 { // no bound
		return w.f.Write(p)
	}
	n := len(p)
	for len(p) > 0 {
		room := w.max/2 - w.size
		if room <= 0 {
			if err := w.rotate(); err != nil {
				return n - len(p), err
			}
			continue
		}
		chunk := p
		if int64(len(chunk)) > room {
			chunk = chunk[:room]
		}
		m, err := w.f.Write(chunk)
		w.size += int64(m)
		if err != nil {
			return n - len(p) + m, err
		}
		p = p[m:]
	}
	return n, nil
}

// rotate moves the full segment to path.1 (dropping the one there) and
// starts a new one that says what was dropped.
func (w *jobLogWriter) rotate() error {
	w.dropped += w.old
	if err := w.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		return err
	}
	w.old = w.size
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w.f, w.size = f, 0
	if w.dropped > 0 {
		m, err := fmt.Fprintf(f, "\n[paddock: %d bytes of earlier output dropped; the log keeps the last %d MiB]\n", w.dropped, w.max>>20)
		w.size += int64(m)
		return err
	}
	return nil
}

func (w *jobLogWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}

// jobLogReader reads a job's log segments in order; with follow it moves
// on to a new segment when the one it reads was moved away.
type jobLogReader struct {
	path string
	f    *os.File
}

func openJobLog(path string) (*jobLogReader, error) {
	r := &jobLogReader{path: path}
	if f, err := os.Open(path + ".1"); err == nil {
		r.f = f
		return r, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r.f = f
	return r, nil
}

// Read reads on; at the end of a segment that is no longer the newest it
// switches to the newest (whose start may be past what was dropped).
func (r *jobLogReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	if n > 0 || err != io.EOF {
		return n, err
	}
	cur, serr := r.f.Stat()
	newest, nerr := os.Stat(r.path)
	if serr != nil || nerr != nil || os.SameFile(cur, newest) {
		return 0, io.EOF
	}
	f, err := os.Open(r.path)
	if err != nil {
		return 0, io.EOF
	}
	r.f.Close()
	r.f = f
	return r.f.Read(p)
}

func (r *jobLogReader) Close() error { return r.f.Close() }

// PrunedLogNote replaces a log that went to keep its user's logs within
// job_logs_per_user_mib.
const PrunedLogNote = "[paddock: this job's log was removed to keep your job logs within job_logs_per_user_mib = %d]\n"

// pruneJobLogs keeps the logs of the jobs in owner's boxes within the
// per-user bound: while they hold more, the log of the job that ended
// first is replaced by a line that says why. Running jobs' logs are
// counted but kept (each is bounded by job_log_max_mib).
func (jb *Jobs) pruneJobLogs(owner int64) {
	limit := jb.cfg.JobLogsPerUserMiB << 20
	if limit <= 0 {
		return
	}
	jb.pruneMu.Lock()
	defer jb.pruneMu.Unlock()
	jobs, err := jb.store.ListJobs("", "")
	if err != nil {
		return
	}
	owners := map[string]int64{}
	type logged struct {
		id    string
		ended time.Time
		size  int64
	}
	var ended []logged
	var total int64
	for _, j := range jobs {
		o, ok := owners[j.Box]
		if !ok {
			if b, err := jb.store.GetBox(j.Box); err == nil {
				o = b.Owner
			} else {
				o = -1
			}
			owners[j.Box] = o
		}
		if o != owner {
			continue
		}
		var size int64
		for _, p := range []string{jb.jobLog(j.ID), jb.jobLog(j.ID) + ".1"} {
			if fi, err := os.Stat(p); err == nil {
				size += fi.Size()
			}
		}
		total += size
		if j.Ended != nil && size > int64(len(PrunedLogNote))+20 {
			ended = append(ended, logged{j.ID, *j.Ended, size})
		}
	}
	sort.Slice(ended, func(a, b int) bool { return ended[a].ended.Before(ended[b].ended) })
	for _, l := range ended {
		if total <= limit {
			return
		}
		os.Remove(jb.jobLog(l.id) + ".1")
		note := fmt.Sprintf(PrunedLogNote, jb.cfg.JobLogsPerUserMiB)
		if err := os.WriteFile(jb.jobLog(l.id), []byte(note), 0o600); err != nil {
			jb.log.Error("pruning a job log", "job", l.id, "err", err)
			continue
		}
		total -= l.size - int64(len(note))
		jb.log.Info("job log pruned", "job", l.id, "bytes", l.size, "user", owner)
	}
}
