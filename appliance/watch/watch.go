// Package watch is file watch: a box's folder, or a file, watched with
// inotify inside the box, its changes as they come.
//
// A program (Script, python3 -c, as the box's user: it reads only
// what that user may read) asks the kernel for inotify watches on the
// path and, with recursive, every folder under it (and each one made
// later), and prints an event per line as the kernel reports them:
// created, modified (a write; several in a row on one file are one, and
// closing a file whose writes were reported is no more: one writer's
// open, write and close is one event however the kernel's reads split
// them), removed, renamed (the kernel's pair of moves, by its cookie, is one
// event with both paths). Each carries the path, what it is and its size
// when it is still there. A move out of the watched tree is a removal,
// one into it a creation. When the kernel's queue overflowed (it holds
// 16384 events by default), the program says so: events were lost.
//
// paddockd reads the lines as they come into a queue of its own of
// Queue events; a client that reads slower than the box writes does
// not slow the box or paddockd: what does not fit is counted, and the
// stream says how many were dropped before its next event. A box may
// have MaxPerBox watches at once.
//
// This folder is file watch's capability whole: its verb (Watcher.Watch,
// over the core's Core), its API route (Routes: the events as
// server-sent events), and its README (the guide and the internals).
package watch

import "bytes"

// lineSplitter hands each line written to it to line, without its end;
// a line longer than max is dropped.
type lineSplitter struct {
	max  int
	buf  []byte
	long bool
	line func([]byte)
}

func (l *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !l.long {
				l.buf = append(l.buf, p...)
				if len(l.buf) > l.max {
					l.buf, l.long = l.buf[:0], true
				}
			}
			break
		}
		if !l.long {
			l.line(append(l.buf, p[:i]...))
		}
		l.buf, l.long = l.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (l *lineSplitter) flush() {
	if len(l.buf) > 0 && !l.long {
		l.line(l.buf)
	}
	l.buf = l.buf[:0]
}

// Script watches argv[1] (argv[2] "1": and the folders under it)
// with inotify and prints its events, a JSON object a line. It ends at
// the end of its input.
const Script = `# paddock: file watch
import ctypes, errno, json, os, select, stat, struct, sys, time
root, recursive, maxw = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3])
libc = ctypes.CDLL(None, use_errno=True)
IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO = 0x2, 0x8, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR, IN_EXCL_UNLINK = 0x4000, 0x8000, 0x40000000, 0x04000000
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF | IN_EXCL_UNLINK
out = []
def emit(**e):
    e['time'] = time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime()) + '.%03dZ' % (int(time.time() * 1000) % 1000)
    out.append(json.dumps(e))
def flush():
    if out:
        os.write(1, ('\n'.join(out) + '\n').encode())
        del out[:]
fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
if fd < 0:
    e = ctypes.get_errno()
    emit(type='error', errno=errno.errorcode.get(e, str(e)), message=os.strerror(e), path=root)
    flush()
    sys.exit(0)
paths = {}
def add(p):
    wd = libc.inotify_add_watch(fd, os.fsencode(p), MASK)
    if wd < 0:
        return ctypes.get_errno()
    paths[wd] = p
    return 0
def fail(e, p):
    emit(type='error', errno=errno.errorcode.get(e, str(e)), message=os.strerror(e), path=p)
    flush()
    sys.exit(0)
def walk(top, report):
    for d, dirs, files in os.walk(top, onerror=None):
        for n in dirs:
            q = os.path.join(d, n)
            if len(paths) >= maxw:
                emit(type='error', message='more than %d folders under %s: not all are watched' % (maxw, root))
                return
            if add(q) == 0 and report:
                emit(type='created', path=q, kind='dir')
        if report:
            for n in files:
                q = os.path.join(d, n)
                info(q, 'created')
e = add(root)
if e:
    fail(e, root)
if recursive and os.path.isdir(root):
    for d, dirs, files in os.walk(root):
        for n in dirs:
            q = os.path.join(d, n)
            if len(paths) >= maxw:
                break
            e = add(q)
            if e and e != errno.ENOENT:
                fail(e, q)
emit(type='ready', path=root, watches=len(paths))
flush()
def kind(m):
    if stat.S_ISDIR(m): return 'dir'
    if stat.S_ISREG(m): return 'file'
    if stat.S_ISLNK(m): return 'link'
    return 'other'
def info(p, t, **kw):
    try:
        st = os.lstat(p)
        emit(type=t, path=p, kind=kind(st.st_mode), size=st.st_size, **kw)
    except OSError:
        emit(type=t, path=p, **kw)
last = None
pending = {}
wrote = set()  # files whose writes were reported and that are not closed yet
while True:
    r, _, _ = select.select([fd, 0], [], [], 0.05 if pending else None)
    if 0 in r:
        if not os.read(0, 65536):
            break
    if fd not in r:
        for c, p in pending.items():
            emit(type='removed', path=p)
            last = None
        pending.clear()
        flush()
        continue
    try:
        buf = os.read(fd, 1 << 20)
    except BlockingIOError:
        continue
    last = None  # writes to one file within one read are one event
    i = 0
    while i + 16 <= len(buf):
        wd, mask, cookie, n = struct.unpack_from('iIII', buf, i)
        name = buf[i + 16:i + 16 + n].split(b'\0', 1)[0]
        i += 16 + n
        if mask & IN_Q_OVERFLOW:
            emit(type='overflow', message="the kernel's queue of this watch's events overflowed: events were lost")
            last = None
            continue
        base = paths.get(wd)
        if base is None:
            continue
        if mask & IN_IGNORED:
            paths.pop(wd, None)
            continue
        p = os.path.join(base, os.fsdecode(name)) if name else base
        isdir = bool(mask & IN_ISDIR)
        if mask & (IN_DELETE_SELF | IN_MOVE_SELF):
            if base == root:
                emit(type='removed', path=root)
                flush()
                sys.exit(0)
            continue
        if mask & IN_CREATE:
            info(p, 'created')
            last = None
            if isdir and recursive:
                if add(p) == 0:
                    walk(p, True)
        elif mask & IN_MODIFY:
            if last != p:
                info(p, 'modified')
                last = p
            if len(wrote) < 4096:
                wrote.add(p)
        elif mask & IN_CLOSE_WRITE:
            # A close after writes already reported is no new change,
            # whichever read the kernel's events fell in.
            if p in wrote:
                wrote.discard(p)
            elif last != p:
                info(p, 'modified')
                last = p
        elif mask & IN_DELETE:
            emit(type='removed', path=p, kind='dir' if isdir else 'file')
            wrote.discard(p)
            last = None
        elif mask & IN_MOVED_FROM:
            pending[cookie] = p
            last = None
        elif mask & IN_MOVED_TO:
            old = pending.pop(cookie, None)
            if old is None:
                info(p, 'created')
            else:
                info(p, 'renamed', **{'from': old})
            if isdir and recursive:
                for w, q in list(paths.items()):
                    if old is not None and (q == old or q.startswith(old + '/')):
                        paths[w] = p + q[len(old):]
                if old is None and add(p) == 0:
                    walk(p, True)
            last = None
    flush()
`
