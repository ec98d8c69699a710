// Package kernel is the code interpreter: Jupyter kernels in a box, one
// per context, that keep their state between runs.
//
// A context is a kernel process in the box (the kernelspec of its
// language, python3's ipykernel in the box image), started as the box's
// user in a session of its own, so that it outlives the command that
// started it. What paddockd knows of it is in the box, in
// /tmp/.paddock-kernels/NAME (its connection file, with the key that
// signs its messages, its process ID, language and start), readable by
// the box's user only; nothing is kept on the server. A program
// (Script, python3 -c, as the box's user) does each operation with
// jupyter_client, the Jupyter project's own client: it sends the code
// on the kernel's shell channel and gathers what the kernel publishes
// for it (output streams, the last expression's value, displays, the
// error and its traceback) until the kernel is idle again. Past the
// run's timeout it interrupts the kernel (SIGINT, the kernelspec's
// interrupt mode) and waits for it to say it is idle: the state stays.
// A run whose caller goes away is interrupted so too (an operation of
// its own), and a run may be followed as it goes (Op.Stream: each
// output and display printed as the kernel publishes it).
//
// A run without a context uses the language's own (named after it),
// started on first use and again when its kernel is gone (the answer
// says Started). A context made by name is never started behind its
// user's back: a run in a dead one is refused until it is restarted. A
// box stopped or restored loses its kernels (they are processes); their
// records say dead.
//
// This folder is the interpreter's capability whole: its verbs
// (Interpreter, over the core's Core), its API routes (Routes), and its
// README (the guide and the internals).
package kernel

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Bounds of the code interpreter.
const (
	MaxContexts    = 8
	MaxTimeout     = time.Hour
	DefaultTimeout = time.Minute
	MaxCode        = 1 << 20
	MaxOutput      = 32 << 20
)

// langs are the names a language may be given by.
var langs = map[string]string{"python": "python", "python3": "python", "py": "python", "node": "javascript",
	"javascript": "javascript", "js": "javascript", "bash": "bash", "sh": "bash"}

func Lang(l string) (string, error) {
	if l == "" {
		return "python", nil
	}
	if v, ok := langs[strings.ToLower(l)]; ok {
		return v, nil
	}
	return "", api.Invalid("lang", "language %q: give python, node or bash (a Jupyter kernel for it must be in the box's image)", l)
}

func CheckName(n string) error {
	if n == "" {
		return nil
	}
	if len(n) > 32 || !isLabelish(n) {
		return api.Invalid("context", "context name %q: use 1-32 lowercase letters, digits and '-', starting with a letter or digit", n)
	}
	return nil
}

func isLabelish(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return false
		}
	}
	return s != ""
}

// Op is one operation of Script.
type Op struct {
	Op      string  `json:"op"` // run, list, start, restart, remove
	Name    string  `json:"name,omitempty"`
	Lang    string  `json:"lang,omitempty"`
	Code    string  `json:"code,omitempty"`
	Timeout float64 `json:"timeout,omitempty"` // seconds
	Auto    bool    `json:"auto,omitempty"`    // run: start the context if it is not running
	Max     int     `json:"max,omitempty"`     // start: at most this many contexts
	Stream  bool    `json:"stream,omitempty"`  // run: print each api.RunEvent as it comes, {"event": …} a line
}

// Outcome is what Script printed.
type Outcome struct {
	Run      *api.RunResult    `json:"run,omitempty"`
	Context  *api.CodeContext  `json:"context,omitempty"`
	Contexts []api.CodeContext `json:"contexts,omitempty"`
	Error    string            `json:"error,omitempty"`
	Kind     string            `json:"kind,omitempty"` // notfound, conflict, invalid
}

// RunOp is the operation that runs p, after its checks, and how long its
// program may take: the timeout, the interrupt's answer, a kernel's
// start.
func RunOp(p api.RunPost) (Op, time.Duration, error) {
	lang, err := Lang(p.Lang)
	if err != nil {
		return Op{}, 0, err
	}
	if err := CheckName(p.Context); err != nil {
		return Op{}, 0, err
	}
	if len(p.Code) > MaxCode {
		return Op{}, 0, api.Invalid("code", "code of %d bytes: at most %d", len(p.Code), MaxCode)
	}
	timeout := DefaultTimeout
	if p.Timeout != "" {
		if timeout, err = api.ParseTTL(p.Timeout); err != nil {
			return Op{}, 0, api.Invalid("timeout", "timeout %q must be seconds or a duration such as 90s", p.Timeout)
		}
		if timeout <= 0 || timeout > MaxTimeout {
			return Op{}, 0, api.Invalid("timeout", "timeout %q: give up to %s", p.Timeout, MaxTimeout)
		}
	}
	op := Op{Op: "run", Name: p.Context, Lang: lang, Code: p.Code, Timeout: timeout.Seconds(), Max: MaxContexts}
	if op.Name == "" {
		op.Name, op.Auto = lang, true
	}
	return op, timeout + 2*time.Minute, nil
}

// Answer reads what Script printed for op in box (its output, exit code
// and error output): the outcome, or the error it says.
func Answer(box string, op Op, out []byte, code int, stderr string, bound time.Duration) (Outcome, error) {
	var o Outcome
	if jerr := json.Unmarshal(out, &o); jerr != nil {
		msg := strings.TrimSpace(stderr)
		if strings.Contains(msg, "No module named 'jupyter_client'") {
			return Outcome{}, api.Conflict("box %q has no Jupyter client (python3's jupyter_client) in its image: the code interpreter needs it and a kernel (the box image has both)", box)
		}
		if code == 124 {
			return Outcome{}, fmt.Errorf("the code interpreter of box %q did not answer within %s", box, bound)
		}
		return Outcome{}, fmt.Errorf("the code interpreter of box %q failed (exit %d): %s", box, code, msg)
	}
	switch o.Kind {
	case "":
	case "notfound":
		return o, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no context named %q", op.Name)}
	case "invalid":
		return o, api.Invalid("lang", "%s", o.Error)
	case "conflict":
		return o, api.Conflict("%s", o.Error)
	default:
		return o, fmt.Errorf("the code interpreter of box %q: %s", box, o.Error)
	}
	if o.Error != "" {
		return o, fmt.Errorf("the code interpreter of box %q: %s", box, o.Error)
	}
	return o, nil
}

// Script does one operation (JSON on its input) on the box's
// kernels and prints the outcome (JSON).
const Script = `# paddock: code interpreter
import json, os, queue, re, shutil, signal, subprocess, sys, time
op = json.load(sys.stdin)
def done(o):
    sys.stdout.write(json.dumps(o))
    sys.exit(0)
def event(e):
    if op.get('stream'):
        sys.stdout.write(json.dumps({'event': e}) + '\n')
        sys.stdout.flush()
def interrupt(m, kc=None):
    if m.get('interrupt') != 'message':
        os.kill(m['pid'], signal.SIGINT)
        return
    own = kc is None
    kc = kc or client(m['name'])
    try:
        kc.control_channel.send(kc.session.msg('interrupt_request', {}))
    finally:
        if own:
            kc.stop_channels()
def fail(kind, msg):
    done({'error': msg, 'kind': kind})
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.kernelspec import KernelSpecManager
ROOT = '/tmp/.paddock-kernels'
os.makedirs(ROOT, mode=0o700, exist_ok=True)
os.chmod(ROOT, 0o700)
def path(name, f=''):
    return os.path.join(ROOT, name, f)
def meta(name):
    try:
        with open(path(name, 'meta.json')) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
def alive(m):
    pid = m.get('pid', 0)
    try:
        os.kill(pid, 0)
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return path(m['name'], 'kernel.json').encode() in f.read()
    except (OSError, TypeError):
        return False
def info(m):
    return {'name': m['name'], 'lang': m['lang'], 'kernel': m['kernel'], 'started': m['started'],
            'state': 'running' if alive(m) else 'dead'}
def names():
    return sorted(n for n in os.listdir(ROOT) if meta(n))
def spec_for(lang):
    specs = KernelSpecManager().get_all_specs()
    for k in sorted(specs):
        l = specs[k]['spec'].get('language', '').lower()
        if l == lang or (lang == 'javascript' and l in ('javascript', 'typescript')):
            return k, specs[k]['spec']
    have = ', '.join(sorted(set(s['spec'].get('language', '?') for s in specs.values()))) or 'none'
    fail('invalid', 'no Jupyter kernel for %s in this box (kernels for: %s)' % ({'javascript': 'node'}.get(lang, lang), have))
def stop(m):
    pid = m.get('pid', 0)
    if not alive(m):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except OSError:
            return
        for _ in range(50):
            if not alive(m):
                return
            time.sleep(0.1)
def start(name, lang):
    kname, spec = spec_for(lang)
    d = path(name)
    old = meta(name)
    if old:
        stop(old)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d, mode=0o700)
    cf = path(name, 'kernel.json')
    write_connection_file(fname=cf, ip='127.0.0.1', key=os.urandom(32).hex().encode(), kernel_name=kname)
    argv = [a.replace('{connection_file}', cf) for a in spec['argv']]
    env = dict(os.environ)
    env.update(spec.get('env') or {})
    home = os.path.expanduser('~')
    log = open(path(name, 'kernel.log'), 'ab')
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, env=env, cwd=home)
    m = {'name': name, 'lang': lang, 'kernel': kname, 'pid': p.pid, 'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
         'interrupt': spec.get('interrupt_mode', 'signal')}
    with open(path(name, 'meta.json'), 'w') as f:
        json.dump(m, f)
    kc = client(name)
    deadline = time.time() + 90
    try:
        while True:
            try:
                kc.wait_for_ready(timeout=max(1, deadline - time.time()))
                break
            except RuntimeError:
                # The client calls a kernel dead when a heartbeat comes a
                # second late, as one starting on a busy machine can: only
                # a kernel whose process has ended is dead.
                if alive(m) and time.time() < deadline:
                    continue
                raise
    except RuntimeError as e:
        with open(path(name, 'kernel.log'), 'rb') as f:
            tail = f.read()[-2000:].decode(errors='replace')
        stop(m)
        fail('', 'the %s kernel did not start: %s %s' % (kname, e, tail))
    finally:
        kc.stop_channels()
    return m
def client(name):
    kc = BlockingKernelClient(connection_file=path(name, 'kernel.json'))
    kc.load_connection_file()
    kc.start_channels()
    return kc
ANSI = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
def run(m, code, timeout):
    kc = client(m['name'])
    out = {'context': m['name'], 'lang': m['lang'], 'stdout': '', 'stderr': '', 'execution_count': 0}
    try:
        msg_id = kc.execute(code, store_history=True, allow_stdin=False, stop_on_error=False)
        event({'started': True})
        deadline = time.time() + timeout
        interrupted = False
        while True:
            left = deadline - time.time()
            if left <= 0:
                if interrupted:
                    out['error'] = {'name': 'KernelNotAnswering', 'value': 'the kernel did not answer its interrupt', 'traceback': []}
                    break
                interrupted = True
                out['timed_out'] = True
                interrupt(m, kc)
                deadline = time.time() + 20
                continue
            try:
                msg = kc.get_iopub_msg(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if msg['parent_header'].get('msg_id') != msg_id:
                continue
            t, c = msg['msg_type'], msg['content']
            if t == 'stream':
                k = 'std' + ('err' if c.get('name') == 'stderr' else 'out')
                out[k] += c.get('text', '')
                event({k: c.get('text', '')})
            elif t == 'execute_result':
                out['result'] = c.get('data', {})
                out['execution_count'] = c.get('execution_count') or 0
            elif t in ('display_data', 'update_display_data'):
                out.setdefault('display', []).append(c.get('data', {}))
                event({'display': c.get('data', {})})
            elif t == 'error':
                out['error'] = {'name': c.get('ename', ''), 'value': c.get('evalue', ''),
                                'traceback': [ANSI.sub('', l) for l in c.get('traceback', [])]}
            elif t == 'execute_input':
                out['execution_count'] = c.get('execution_count') or out['execution_count']
            elif t == 'status' and c.get('execution_state') == 'idle':
                break
        if out.get('timed_out'):
            e = out.get('error') or {}
            out['error'] = {'name': 'TimeoutError', 'value': 'interrupted after %gs (%s)' % (timeout, e.get('name', 'no answer')),
                            'traceback': e.get('traceback', [])}
    finally:
        kc.stop_channels()
    return out
o = op['op']
name = op.get('name', '')
if o == 'list':
    done({'contexts': [info(meta(n)) for n in names()]})
if o == 'start':
    if meta(name) and alive(meta(name)):
        fail('conflict', 'context %s is there: restart or remove it' % name)
    if len([n for n in names() if n != name]) >= op.get('max', 8):
        fail('conflict', 'this box has %d contexts, the most it may: remove one' % op.get('max', 8))
    done({'context': info(start(name, op['lang']))})
m = meta(name)
if o == 'run':
    started = False
    if m and m['lang'] != op['lang']:
        fail('conflict', 'context %s runs %s, not %s' % (name, m['lang'], op['lang']))
    if not m or not alive(m):
        if not op.get('auto'):
            if not m:
                fail('notfound', '')
            fail('conflict', 'the kernel of context %s is not running (the box stopped, or it died): restart it' % name)
        if not m and len(names()) >= op.get('max', 8):
            fail('conflict', 'this box has %d contexts, the most it may: remove one' % op.get('max', 8))
        m = start(name, op['lang'])
        started = True
    r = run(m, op['code'], op['timeout'])
    if started:
        r['started'] = True
    done({'run': r})
if not m:
    fail('notfound', '')
if o == 'interrupt':
    if m and alive(m):
        interrupt(m)
    done({})
if o == 'restart':
    done({'context': info(start(name, m['lang']))})
if o == 'remove':
    stop(m)
    shutil.rmtree(path(name), ignore_errors=True)
    done({})
fail('', 'unknown operation ' + o)
`
