# paddock: this box's commands, started ahead (warm exec)
import os, sys, json, signal, pwd, grp, select, socket, errno
buf = bytearray()
def more():
    b = os.read(0, 65536)
    buf.extend(b)
    return len(b) > 0
def frame():
    if len(buf) < 5:
        return None
    n = int.from_bytes(buf[1:5], 'big')
    if len(buf) < 5 + n:
        return None
    f = (buf[0], bytes(buf[5:5 + n]))
    del buf[:5 + n]
    return f
def out(t, b=b''):
    m = memoryview(t + len(b).to_bytes(4, 'big') + b)
    while m:
        m = m[os.write(1, m):]
def ids(user):
    name, _, group = user.partition(':')
    p = None
    if name.isdigit():
        uid = int(name)
        try:
            p = pwd.getpwuid(uid)
        except KeyError:
            pass
    else:
        p = pwd.getpwnam(name)
        uid = p.pw_uid
    gid = p.pw_gid if p else 0
    if group:
        gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
        groups = [gid]
    else:
        groups = [g.gr_gid for g in grp.getgrall() if p and p.pw_name in g.gr_mem] + [gid]
    return uid, gid, groups, p
def prepare(s):
    uid, gid, groups, p = ids(s['user'])
    env = {}
    for k, v in os.environb.items():
        if not (k == b'HOME' and sys.argv[1] == '1'):
            env[k] = v
    for e in s['env'] or []:
        k, eq, v = os.fsencode(e).partition(b'=')
        if eq:
            env[k] = v
        else:
            env.pop(k, None)
    if b'HOME' not in env:
        env[b'HOME'] = os.fsencode(p.pw_dir if p else '/')
    cmd = s['cmd']
    path = None
    if '/' in cmd[0]:
        path = cmd[0]
    else:
        for d in os.fsdecode(env.get(b'PATH', b'')).split(':'):
            f = os.path.join(d or '.', cmd[0])
            if os.path.isfile(f) and os.access(f, os.X_OK):
                path = f
                break
    if path is None or not os.path.isfile(path):
        raise OSError('not found')
    return uid, gid, groups, env, s['dir'], path, cmd
def child(prep, i, o, e, x):
    try:
        uid, gid, groups, env, d, path, cmd = prep
        os.setsid()
        os.dup2(i, 0)
        os.dup2(o, 1)
        os.dup2(e, 2)
        later = False
        if d:
            try:
                os.chdir(d)
            except PermissionError:
                later = True
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
        if later:
            os.chdir(d)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        os.execve(path, cmd, env)
    except BaseException:
        pass
    try:
        os.write(x, b'!')
    finally:
        os._exit(127)
def popen(prep, i, o, e):
    # The command as a child of a process whose ids are already its own:
    # subprocess then starts it by vfork, not by a fork of this program.
    import subprocess
    uid, gid, groups, env, d, path, cmd = prep
    return subprocess.Popen(cmd, executable=path, stdin=i, stdout=o, stderr=e, cwd=d or None, env=env,
                            start_new_session=True, restore_signals=True, close_fds=True)
def serve(s):
    # A spawner: a child of the program that took one user's ids once, and
    # starts that user's commands (popen). It says G or N, then x and the
    # exit code when the command ends, not reaping it until told (r); k
    # kills the command's group. It holds nothing of the program's stream.
    import pickle
    while True:
        try:
            m, fds, _, _ = socket.recv_fds(s, 1 << 22, 3)
        except OSError:
            os._exit(0)
        if not m:
            os._exit(0)
        try:
            p = popen(pickle.loads(m), *fds)
        except BaseException:
            p = None
        for f in fds:
            os.close(f)
        if p is None:
            s.send(b'N')
            continue
        s.send(b'G')
        pfd = os.pidfd_open(p.pid)
        ended = False
        while True:
            rr = select.select([s] if ended else [s, pfd], [], [])[0]
            if pfd in rr and not ended:
                w = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
                code = w.si_status if w.si_code == os.CLD_EXITED else 128 + w.si_status
                s.send(b'x' + code.to_bytes(4, 'big'))
                ended = True
            if s in rr:
                m = s.recv(16)
                if not m:
                    os._exit(0)
                if m == b'k':
                    try:
                        os.killpg(p.pid, signal.SIGKILL)
                    except OSError:
                        pass
                    s.send(b'K')
                elif m == b'r' and ended:
                    break
        os.close(pfd)
        os.waitpid(p.pid, 0)
        p.returncode = code
sp = None
def spawner(ident):
    # The spawner of ident (uid, gid, groups), started on first use; one
    # of other ids ends (it reads the end of its input).
    global sp
    if sp is not None and sp[0] == ident:
        return sp[1]
    if sp is not None:
        sp[1].close()
        os.waitpid(sp[2], 0)
        sp = None
    import subprocess, pickle, ctypes  # now: the user may not read them
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            keep = b.fileno()
            for f in [int(n) for n in os.listdir('/proc/self/fd')]:
                if f != keep:
                    try:
                        os.close(f)
                    except OSError:
                        pass
            n = os.open('/dev/null', os.O_RDWR)
            os.dup2(n, 1)
            os.dup2(n, 2)
            uid, gid, groups = ident
            os.setgroups(sorted(groups))
            os.setgid(gid)
            os.setuid(uid)
            # Changing ids made it undumpable: its /proc files (environ)
            # unreadable even to the box's root, who lacks CAP_SYS_PTRACE.
            # It is made as open as the user's other processes again; it
            # holds nothing the user (who has sudo) may not see, and the
            # program takes nothing from it but its own commands' starts
            # and exit codes.
            try:
                ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
            except Exception:
                pass
            # The user's processes may signal it (pkill python3): what ends
            # a process unless caught is caught, and does nothing. A
            # command's dispositions are the usual ones (caught ones are
            # reset by its exec).
            for n in ('SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGALRM'):
                signal.signal(getattr(signal, n), lambda *_: None)
            b.send(b'U')
            serve(b)
        finally:
            os._exit(0)
    b.close()
    if a.recv(16) != b'U':
        # It could not take the ids (or start): none.
        a.close()
        os.waitpid(pid, 0)
        raise OSError(errno.ECHILD, 'no spawner')
    sp = (ident, a, pid)
    return a
def run(spec):
    global sp
    try:
        prep = prepare(json.loads(spec))
    except Exception:
        out(b'N')
        return
    i_r, i_w = os.pipe()
    o_r, o_w = os.pipe()
    e_r, e_w = os.pipe()
    ident = (prep[0], prep[1], frozenset(prep[2]))
    p = via = None
    failed = True
    if ident == (os.getuid(), os.getgid(), frozenset(os.getgroups())):
        # This program's own ids (root's, mostly): started by vfork.
        try:
            p = popen(prep, i_r, o_w, e_w)
            pid = p.pid
            failed = False
        except BaseException:
            pass
        for f in (i_r, o_w, e_w):
            os.close(f)
    else:
        if os.getuid() == 0 and hasattr(socket, 'send_fds'):
            # Another user's: by that user's spawner, also by vfork.
            try:
                import pickle
                via = spawner(ident)
                socket.send_fds(via, [pickle.dumps(prep)], [i_r, o_w, e_w])
            except OSError as err:
                # Not sent (a command too large for one message, or no
                # spawner): a fork of this program, as below.
                if via is not None and err.errno != errno.EMSGSIZE:
                    via.close()
                    os.waitpid(sp[2], 0)
                    sp = None
                via = None
            if via is not None:
                try:
                    m = via.recv(16)
                except OSError:
                    m = b''
                if m == b'G':
                    failed = False
                elif m != b'N':
                    os._exit(1)  # it may have started: the driver says so
        if via is None:
            x_r, x_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                child(prep, i_r, o_w, e_w, x_w)
            os.close(x_w)
            failed = bool(os.read(x_r, 1))
            os.close(x_r)
            if failed:
                os.waitpid(pid, 0)
        for f in (i_r, o_w, e_w):
            os.close(f)
    if failed:
        for f in (i_w, o_r, e_r):
            os.close(f)
        out(b'N')
        return
    out(b'G')
    pfd = os.pidfd_open(pid) if via is None else via.fileno()
    os.set_blocking(i_w, False)
    pending = bytearray()
    closing = gone = False
    status = early = None
    reads = {o_r: b'o', e_r: b'e'}
    while reads or status is None:
        r = list(reads)
        if status is None and not reads and early is not None:
            # Its exit came while it was killed (the caller gone).
            status = int.from_bytes(early[1:], 'big')
            via.send(b'r')
            continue
        if status is None and not reads:
            r.append(pfd)
        if not gone and len(pending) < (1 << 20):
            r.append(0)
        w = [i_w] if i_w is not None and pending else []
        rr, ww, _ = select.select(r, w, [])
        if ww:
            try:
                del pending[:os.write(i_w, pending)]
            except BlockingIOError:
                pass
            except OSError:
                os.close(i_w)
                i_w = None
                pending.clear()
        for f in rr:
            if f == 0:
                if not more():
                    gone = True
                while True:
                    fr = frame()
                    if fr is None:
                        break
                    if fr[0] == ord('i') and i_w is not None:
                        pending += fr[1]
                    elif fr[0] == ord('c'):
                        closing = True
            elif f == pfd and via is not None:
                m = via.recv(16)
                if len(m) != 5 or m[0] != ord('x'):
                    os._exit(1)  # the spawner is gone: the exit code is not known
                status = int.from_bytes(m[1:], 'big')
                via.send(b'r')
            elif f == pfd:
                status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                if status < 0:
                    status = 128 - status
                if p is not None:
                    p.returncode = status
                os.close(pfd)
            else:
                b = os.read(f, 65536)
                if not b:
                    os.close(f)
                    del reads[f]
                elif not gone:
                    out(reads[f], b)
        if i_w is not None and (gone or (closing and not pending)):
            if gone and not closing and status is None:
                # The caller went before the end of the input: no end of
                # input for the command, which is ended (it leads its group).
                if via is None:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass
                else:
                    # Killed by the spawner before its input closes: wait
                    # for it to say so (K), keeping an exit it said first.
                    via.send(b'k')
                    while True:
                        m = via.recv(16)
                        if m == b'K':
                            break
                        if len(m) != 5 or m[0] != ord('x'):
                            os._exit(1)
                        early = m
            os.close(i_w)
            i_w = None
    if i_w is not None:
        os.close(i_w)
    if gone:
        os._exit(0)
    out(b'x', status.to_bytes(4, 'big'))
if len(sys.argv) > 2 and os.getuid() == 0 and hasattr(socket, 'send_fds'):
    # The spawner of the box's user, before the first command needs it,
    # and one command through it (true, its output nowhere): after a
    # fork, each page the program or the spawner writes is copied on its
    # first write, and those a command writes are now copied, not on the
    # first command's time.
    try:
        uid, gid, groups, _ = ids(sys.argv[2])
        via = spawner((uid, gid, frozenset(groups)))
    except Exception:
        via = None
    try:
        prep = via and prepare({'user': sys.argv[2], 'env': None, 'dir': '', 'cmd': ['true']})
    except Exception:
        prep = None  # no true here: no such command first
    if prep:
        try:
            import pickle
            null = os.open('/dev/null', os.O_RDWR)
            try:
                socket.send_fds(via, [pickle.dumps(prep)], [null, null, null])
            finally:
                os.close(null)
            m = via.recv(16)
            if m == b'G':
                if via.recv(16)[:1] != b'x':
                    raise OSError(errno.EPROTO, 'no exit')
                via.send(b'r')
            elif m != b'N':
                raise OSError(errno.EPROTO, 'no answer')
        except Exception:
            # A spawner in a state not known is not kept.
            via.close()
            os.waitpid(sp[2], 0)
            sp = None
out(b'R')
while True:
    f = frame()
    if f is None:
        if not more():
            os._exit(0)
    elif f[0] == ord('r'):
        run(f[1])
