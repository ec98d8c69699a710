// Package computer is a program's mouse and keyboard on a box's desktop
// (computer use): the actions, in the vocabulary and with the argument
// names of Anthropic's computer-use tool, checked before anything runs,
// and the program (Script, python3 -c, run as the box's user on its
// display) that carries them out and answers with each one's result.
//
// The program uses xdotool for the mouse and keyboard, xprop and
// xwininfo for the windows, xwd to see the screen change and
// ImageMagick's import for screenshots: what the box's own user can do
// from a terminal; nothing runs as root and nothing outside the box.
// Coordinates are in the pixels of the screenshots the caller sees: with
// a scale below 1, screenshots are shrunk and coordinates scaled back to
// the screen's (and the answer's scaled down again).
//
// Typing: xdotool types a character the keyboard map lacks (é, €, ✓ on a
// US map) by binding a spare key code to it for one key press and
// unbinding it at once; a program that reads the press after that reads
// nothing, or another letter. So the characters a text needs are bound
// first (xmodmap, on free key codes, two left for xdotool's own use) and
// stay bound while it is typed.
//
// This folder is computer use's capability whole: its verb (Computer,
// over the core's Core), its API route (Routes), and its README (the
// guide and the internals).
package computer

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Bounds of one request.
const (
	MaxActions  = 100
	maxText     = 10000 // characters typed or keys named by one action
	maxDuration = 60.0  // seconds of hold_key, wait, wait_idle, launch
)

// actionNames are the actions and what each needs.
var actionNames = map[string]struct{ coordinate, text, optionalCoordinate bool }{
	"key":             {text: true},
	"type":            {text: true},
	"mouse_move":      {coordinate: true},
	"left_click":      {optionalCoordinate: true},
	"right_click":     {optionalCoordinate: true},
	"middle_click":    {optionalCoordinate: true},
	"double_click":    {optionalCoordinate: true},
	"triple_click":    {optionalCoordinate: true},
	"left_click_drag": {coordinate: true},
	"left_mouse_down": {},
	"left_mouse_up":   {},
	"scroll":          {optionalCoordinate: true},
	"hold_key":        {text: true},
	"wait":            {},
	"cursor_position": {},
	"screenshot":      {},
	"zoom":            {},
	"windows":         {},
	"launch":          {},
	"wait_idle":       {},
}

func init() {
	// The API's list and this table name the same actions.
	if len(api.DesktopActionNames) != len(actionNames) {
		panic("api.DesktopActionNames and actionNames differ")
	}
	for _, n := range api.DesktopActionNames {
		if _, ok := actionNames[n]; !ok {
			panic("desktop action " + n + " has no checks")
		}
	}
}

// sortedActions lists the actions, sorted, for messages.
func sortedActions() string {
	out := slices.Clone(api.DesktopActionNames)
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Check checks a request before anything runs: a bad one
// changes nothing on the desktop. Errors name the action by its place.
func Check(p api.DesktopActionsPost) error {
	if len(p.Actions) == 0 && !p.Screenshot {
		return api.Invalid("actions", "no actions given (and no screenshot asked for)")
	}
	if len(p.Actions) > MaxActions {
		return api.Invalid("actions", "%d actions in one request: at most %d", len(p.Actions), MaxActions)
	}
	if p.Scale < 0 || p.Scale > 1 {
		return api.Invalid("scale", "scale %g: give a number above 0, up to 1 (a screenshot shrunk to that part of the screen's size)", p.Scale)
	}
	for i, a := range p.Actions {
		field := fmt.Sprintf("actions[%d]", i)
		bad := func(format string, args ...any) error {
			return api.Invalid(field, "action %d (%s): %s", i, a.Action, fmt.Sprintf(format, args...))
		}
		need, ok := actionNames[a.Action]
		if !ok {
			return api.Invalid(field, "action %d: unknown action %q: give one of %s", i, a.Action, sortedActions())
		}
		if err := checkPoint(a.Coordinate); err != nil {
			return bad("coordinate %v: %v", a.Coordinate, err)
		}
		if err := checkPoint(a.StartCoordinate); err != nil {
			return bad("start_coordinate %v: %v", a.StartCoordinate, err)
		}
		if need.coordinate && a.Coordinate == nil {
			return bad("give a coordinate [x, y]")
		}
		if a.Coordinate != nil && !need.coordinate && !need.optionalCoordinate {
			return bad("takes no coordinate")
		}
		if a.StartCoordinate != nil && a.Action != "left_click_drag" {
			return bad("only left_click_drag takes a start_coordinate")
		}
		if need.text && strings.TrimSpace(a.Text) == "" && a.Action != "type" {
			return bad("give the keys in text (xdotool's names: \"ctrl+s\", \"Return\")")
		}
		if a.Action == "type" && a.Text == "" {
			return bad("give the text to type")
		}
		if utf8.RuneCountInString(a.Text) > maxText {
			return bad("text of %d characters: at most %d in one action", utf8.RuneCountInString(a.Text), maxText)
		}
		if !utf8.ValidString(a.Text) || strings.ContainsRune(a.Text, 0) {
			return bad("text is not valid UTF-8 text")
		}
		if a.Duration < 0 || a.Duration > maxDuration {
			return bad("duration %g s: give 0 to %g seconds", a.Duration, maxDuration)
		}
		switch a.Action {
		case "hold_key", "wait":
			if a.Duration == 0 {
				return bad("give a duration in seconds")
			}
		case "scroll":
			switch a.ScrollDirection {
			case "up", "down", "left", "right":
			default:
				return bad("scroll_direction %q: give up, down, left or right", a.ScrollDirection)
			}
			if a.ScrollAmount < 0 || a.ScrollAmount > 100 {
				return bad("scroll_amount %d: give 1 to 100 (default 3)", a.ScrollAmount)
			}
		case "zoom":
			r := a.Region
			if len(r) != 4 || r[0] < 0 || r[1] < 0 || r[2] <= r[0] || r[3] <= r[1] {
				return bad("give a region [x0, y0, x1, y1] with x0 < x1 and y0 < y1")
			}
		case "launch":
			if strings.TrimSpace(a.Target) == "" {
				return bad("give a target: a URL, a file in the box or a command line")
			}
			if len(a.Target) > 4096 || strings.ContainsRune(a.Target, 0) {
				return bad("target is too long or not text")
			}
		}
		if a.Region != nil && a.Action != "zoom" {
			return bad("only zoom takes a region")
		}
		if a.Target != "" && a.Action != "launch" {
			return bad("only launch takes a target")
		}
		if a.ScrollDirection != "" && a.Action != "scroll" {
			return bad("only scroll takes a scroll_direction")
		}
	}
	return nil
}

func checkPoint(c []int) error {
	if c == nil {
		return nil
	}
	if len(c) != 2 {
		return fmt.Errorf("give two numbers, [x, y]")
	}
	if c[0] < 0 || c[1] < 0 {
		return fmt.Errorf("negative")
	}
	return nil
}

// Bound is how long a request's program may run: what its actions may
// wait, and a minute for the rest.
func Bound(p api.DesktopActionsPost) time.Duration {
	bound := time.Minute
	for _, a := range p.Actions {
		d := a.Duration
		switch {
		case a.Action == "wait_idle" && d == 0:
			d = 5
		case a.Action == "launch" && d == 0:
			d = 10
		}
		bound += time.Duration(d * float64(time.Second))
	}
	return bound
}

// outcome is what Script prints.
type outcome struct {
	api.DesktopActionsResult
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"` // invalid: the action's arguments, as the screen showed
	Index int    `json:"index"`
}

// Answer reads what Script printed for request p on box (its output
// and exit code): the result, or the error it says, naming the action
// that failed and how many were done. A refusal of the action's
// arguments is invalid; a display that does not answer, a conflict.
func Answer(box string, p api.DesktopActionsPost, out []byte, code int, stderr string, bound time.Duration) (api.DesktopActionsResult, error) {
	var o outcome
	if jerr := json.Unmarshal(out, &o); jerr != nil {
		if code == 124 {
			return api.DesktopActionsResult{}, fmt.Errorf("the desktop actions of box %q ran past their bound (%s)", box, bound)
		}
		return api.DesktopActionsResult{}, fmt.Errorf("the desktop actions of box %q failed (exit %d): %s", box, code, strings.TrimSpace(stderr))
	}
	if o.Error != "" {
		msg := fmt.Sprintf("action %d (%s): %s", o.Index, p.Actions[min(o.Index, len(p.Actions)-1)].Action, o.Error)
		if o.Index > 0 {
			msg += fmt.Sprintf(" (the %d before it were done)", o.Index)
		}
		switch o.Kind {
		case "invalid":
			return api.DesktopActionsResult{}, api.Invalid(fmt.Sprintf("actions[%d]", o.Index), "%s", msg)
		case "nodesktop":
			return api.DesktopActionsResult{}, &api.Error{Code: api.CodeConflict, Message: fmt.Sprintf("the desktop of box %q is not up: %s", box, o.Error)}
		}
		return api.DesktopActionsResult{}, fmt.Errorf("%s", msg)
	}
	if o.Results == nil {
		o.Results = []api.DesktopActionResult{}
	}
	return o.DesktopActionsResult, nil
}

// Script runs a request's actions (JSON on its input) on the
// display and prints the outcome (JSON). It starts no shell: every
// program gets its arguments as a list.
const Script = `# paddock: desktop actions
import base64, hashlib, json, os, re, shlex, shutil, subprocess, sys, time
req = json.load(sys.stdin)
scale = req.get('scale') or 1.0
class Invalid(Exception): pass
class Failed(Exception): pass
PIPE = subprocess.PIPE
def run(*args, data=None):
    try:
        r = subprocess.run(list(args), stdout=PIPE, stderr=PIPE, input=data)
    except FileNotFoundError:
        raise Failed('%s is not in the box' % args[0])
    if r.returncode != 0:
        raise Failed('%s %s: %s' % (args[0], args[1] if len(args) > 1 else '', r.stderr.decode(errors='replace').strip() or 'exit %d' % r.returncode))
    return r.stdout
def done(o):
    sys.stdout.write(json.dumps(o))
    sys.exit(0)
for i in range(150):
    if subprocess.run(['xdotool', 'getdisplaygeometry'], stdout=PIPE, stderr=PIPE).returncode == 0:
        break
    time.sleep(0.1)
else:
    done({'error': 'no X server answers on ' + os.environ.get('DISPLAY', ''), 'kind': 'nodesktop', 'index': 0})
W, H = map(int, run('xdotool', 'getdisplaygeometry').split())
SW, SH = round(W * scale), round(H * scale)
def pt(c, what='coordinate'):
    if c is None:
        return None
    x, y = round(c[0] / scale), round(c[1] / scale)
    if x >= W or y >= H or c[0] >= SW or c[1] >= SH:
        raise Invalid('%s %s is off the screen (%dx%d)' % (what, c, SW, SH))
    return x, y
def out_pt(x, y):
    return [min(round(x * scale), SW - 1), min(round(y * scale), SH - 1)]
def png(crop=None, shrink=True):
    a = ['import', '-silent', '-window', 'root']
    if crop:
        a += ['-crop', '%dx%d+%d+%d' % crop, '+repage']
    if shrink and scale != 1:
        a += ['-resize', '%dx%d!' % (SW, SH)]
    return base64.b64encode(run(*(a + ['png:-']))).decode()
def move(c, what='coordinate'):
    x, y = pt(c, what)
    run('xdotool', 'mousemove', '--sync', str(x), str(y))
def keys(text):
    return [k for k in text.split() if k]
def with_mods(a, fn):
    mods = keys(a.get('text') or '')
    if mods:
        run('xdotool', 'keydown', *mods)
    try:
        fn()
    finally:
        if mods:
            run('xdotool', 'keyup', *reversed(mods))
def clients():
    try:
        out = run('xprop', '-root', '_NET_CLIENT_LIST').decode()
    except Failed:
        out = ''
    ids = re.findall(r'0x[0-9a-fA-F]+', out.partition('#')[2])
    if not ids:
        try:
            ids = [hex(int(w)) for w in run('xdotool', 'search', '--onlyvisible', '--maxdepth', '1', '--name', '.').split()]
        except Failed:
            ids = []
    return ids
def window(wid, is_active):
    try:
        title = run('xdotool', 'getwindowname', wid).decode(errors='replace').rstrip('\n')
        # xwininfo's absolute corner: xdotool's geometry counts a
        # reparenting window manager's frame twice.
        g = {}
        for l in run('xwininfo', '-id', wid).decode(errors='replace').splitlines():
            k, _, v = l.strip().partition(':')
            if k in ('Absolute upper-left X', 'Absolute upper-left Y', 'Width', 'Height'):
                g[k] = int(v.strip())
    except (Failed, ValueError):
        return None
    if len(g) != 4:
        return None
    x, y = out_pt(max(g['Absolute upper-left X'], 0), max(g['Absolute upper-left Y'], 0))
    return {'id': wid, 'title': title, 'x': x, 'y': y, 'width': round(g['Width'] * scale), 'height': round(g['Height'] * scale), 'active': is_active}
def active():
    try:
        return hex(int(run('xdotool', 'getactivewindow').strip()))
    except (Failed, ValueError):
        return ''
def windows(only=None):
    act = active()
    ws = []
    for wid in clients():
        if only is not None and int(wid, 16) not in only:
            continue
        w = window(wid, int(wid, 16) == int(act or '0', 16) and act != '')
        if w and w['width'] > 0 and w['height'] > 0:
            ws.append(w)
    return ws
def session_env():
    env = dict(os.environ)
    env.setdefault('HOME', os.path.expanduser('~'))
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            if os.stat('/proc/' + p).st_uid != os.getuid():
                continue
            with open('/proc/%s/comm' % p) as f:
                if f.read().strip() != 'xfce4-session':
                    continue
            with open('/proc/%s/environ' % p, 'rb') as f:
                for kv in f.read().split(b'\0'):
                    k, _, v = kv.decode(errors='replace').partition('=')
                    if k == 'DBUS_SESSION_BUS_ADDRESS':
                        env[k] = v
        except OSError:
            continue
    return env
def wm_pid(wid):
    try:
        m = re.search(r'= (\d+)', run('xprop', '-id', wid, '_NET_WM_PID').decode())
    except Failed:
        return 0
    return int(m.group(1)) if m else 0
def below(pid, root):
    for _ in range(64):
        if pid == root:
            return True
        if pid <= 1:
            return False
        try:
            with open('/proc/%d/stat' % pid) as f:
                pid = int(f.read().rpartition(')')[2].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False
# Typing. xdotool types a character the keyboard map lacks (é, €, ✓ on
# a US map) by binding a spare key code to it for one key press and
# unbinding it at once; a program that reads the press after that reads
# nothing, or another letter. So the characters a text needs are bound
# first (xmodmap, on free key codes, two left for xdotool's own use) and
# stay bound while it is typed; the codes bound so (listed in KEYS) are
# given back when the next text needs room.
KEYS = '/tmp/.paddock-keycodes'
def keysym(ch):
    o = ord(ch)
    return o if 0x20 <= o <= 0x7e or 0xa0 <= o <= 0xff else 0x1000000 + o
def keymap():
    have, free = set(), []
    for l in run('xmodmap', '-pk').decode(errors='replace').splitlines():
        f = l.split()
        if not f or not f[0].isdigit():
            continue
        vals = [int(v, 16) for v in re.findall(r'0x([0-9a-fA-F]+)', l)]
        if not any(vals):
            free.append(int(f[0]))
        have.update(vals)
    return have, free
def bound():
    try:
        with open(KEYS) as f:
            return [int(k) for k in f.read().split()]
    except (OSError, ValueError):
        return []
def bind(chars, settle):
    have, free = keymap()
    need = sorted(c for c in chars if keysym(c) not in have)
    if not need:
        return
    mine = bound()
    if len(need) > len(free) - 2 and mine:
        if settle:
            time.sleep(0.2)  # what was typed with them is read first
        run('xmodmap', *[x for k in mine for x in ('-e', 'keycode %d =' % k)])
        mine = []
        have, free = keymap()
    args = []
    for c, k in zip(need, free[:max(len(free) - 2, 0)]):
        args += ['-e', 'keycode %d = U%04X U%04X' % (k, ord(c), ord(c))]
        mine.append(k)
    if args:
        run('xmodmap', *args)
    with open(KEYS, 'w') as f:
        f.write(' '.join(map(str, mine)))
def type_text(text):
    _, free = keymap()
    room = max(len(free) + len(bound()) - 2, 1)
    # Parts whose characters beyond the map fit in the free codes.
    parts, part, extra = [], '', set()
    for ch in text:
        if ch not in '\n\t' and ord(ch) > 0x7e and ch not in extra:
            if len(extra) == room:
                parts.append((part, extra))
                part, extra = '', set()
            extra.add(ch)
        part += ch
    parts.append((part, extra))
    for n, (part, extra) in enumerate(parts):
        bind(extra, n > 0)
        for m, line in enumerate(part.split('\n')):
            if m > 0:
                run('xdotool', 'key', 'Return')
            for k in range(0, len(line), 50):
                run('xdotool', 'type', '--delay', '12', '--', line[k:k + 50])
def screen_hash():
    # A window that goes while the screen is read fails the read
    # (BadDrawable): read it again.
    for n in range(5):
        try:
            return hashlib.sha256(run('xwd', '-root', '-silent')).hexdigest()
        except Failed:
            if n == 4:
                raise
            time.sleep(0.1)
results = []
i = 0
try:
    for i, a in enumerate(req.get('actions') or []):
        act = a['action']
        r = {'action': act}
        d = a.get('duration') or 0
        if act == 'key':
            run('xdotool', 'key', '--delay', '40', '--', *keys(a['text']))
        elif act == 'type':
            type_text(a['text'])
        elif act == 'mouse_move':
            move(a['coordinate'])
        elif act in ('left_click', 'right_click', 'middle_click', 'double_click', 'triple_click'):
            if a.get('coordinate'):
                move(a['coordinate'])
            button = {'left_click': 1, 'right_click': 3, 'middle_click': 2}.get(act, 1)
            repeat = {'double_click': 2, 'triple_click': 3}.get(act, 1)
            with_mods(a, lambda: run('xdotool', 'click', '--repeat', str(repeat), '--delay', '80', str(button)))
        elif act == 'left_click_drag':
            if a.get('start_coordinate'):
                move(a['start_coordinate'], 'start_coordinate')
            g = dict(l.split('=', 1) for l in run('xdotool', 'getmouselocation', '--shell').decode().split() if '=' in l)
            x0, y0 = int(g['X']), int(g['Y'])
            x1, y1 = pt(a['coordinate'])
            run('xdotool', 'mousedown', '1')
            try:
                for s in range(1, 11):
                    run('xdotool', 'mousemove', '--sync', str(x0 + (x1 - x0) * s // 10), str(y0 + (y1 - y0) * s // 10))
                    time.sleep(0.02)
            finally:
                run('xdotool', 'mouseup', '1')
        elif act == 'left_mouse_down':
            run('xdotool', 'mousedown', '1')
        elif act == 'left_mouse_up':
            run('xdotool', 'mouseup', '1')
        elif act == 'scroll':
            if a.get('coordinate'):
                move(a['coordinate'])
            button = {'up': 4, 'down': 5, 'left': 6, 'right': 7}[a['scroll_direction']]
            n = a.get('scroll_amount') or 3
            with_mods(a, lambda: run('xdotool', 'click', '--repeat', str(n), '--delay', '30', str(button)))
        elif act == 'hold_key':
            ks = keys(a['text'])
            run('xdotool', 'keydown', *ks)
            try:
                time.sleep(d)
            finally:
                run('xdotool', 'keyup', *reversed(ks))
        elif act == 'wait':
            time.sleep(d)
        elif act == 'cursor_position':
            g = dict(l.split('=', 1) for l in run('xdotool', 'getmouselocation', '--shell').decode().split() if '=' in l)
            r['coordinate'] = out_pt(int(g['X']), int(g['Y']))
        elif act == 'screenshot':
            r['image'] = png()
        elif act == 'zoom':
            x0, y0, x1, y1 = a['region']
            sx0, sy0 = pt([x0, y0], 'region')
            sx1, sy1 = min(round(x1 / scale), W), min(round(y1 / scale), H)
            r['image'] = png((sx1 - sx0, sy1 - sy0, sx0, sy0), shrink=False)
        elif act == 'windows':
            r['windows'] = windows()
        elif act == 'launch':
            t = a['target'].strip()
            before = set(int(w, 16) for w in clients())
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*://', t) or os.path.exists(t):
                opener = shutil.which('xdg-open') or shutil.which('exo-open')
                if not opener:
                    raise Failed('nothing in the box opens URLs or files (xdg-open, exo-open)')
                argv = [opener, t]
            else:
                try:
                    argv = shlex.split(t)
                except ValueError as e:
                    raise Invalid('target %r: %s' % (t, e))
                if not shutil.which(argv[0]):
                    raise Invalid('no program %r in the box' % argv[0])
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True, env=session_env(), cwd=os.path.expanduser('~'))
            # Its windows: new ones whose process (_NET_WM_PID) is the
            # one started or below it, not others that opened meanwhile.
            end = time.time() + (d or 10)
            new = []
            while time.time() < end:
                new = [w for w in clients() if int(w, 16) not in before and below(wm_pid(w), p.pid)]
                if new:
                    time.sleep(0.2)
                    break
                rc = p.poll()
                if rc is not None and rc != 0:
                    raise Failed('%s exited with code %d' % (argv[0], rc))
                time.sleep(0.1)
            r['windows'] = windows(set(int(w, 16) for w in new)) if new else []
        elif act == 'wait_idle':
            end = time.time() + (d or 5)
            last, same, idle = screen_hash(), 0, False
            while time.time() < end:
                time.sleep(0.25)
                h = screen_hash()
                same = same + 1 if h == last else 0
                last = h
                if same >= 2:
                    idle = True
                    break
            r['idle'] = idle
        else:
            raise Invalid('unknown action %r' % act)
        results.append(r)
    o = {'results': results, 'width': SW, 'height': SH}
    if req.get('screenshot'):
        o['screenshot'] = png()
    done(o)
except Invalid as e:
    done({'error': str(e), 'kind': 'invalid', 'index': i, 'results': results})
except Failed as e:
    done({'error': str(e), 'index': i, 'results': results})
`
