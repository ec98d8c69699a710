package accesscmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/client"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// Audit lists the audit log, follows it, or checks its chain.
func Audit(e *cmdenv.Env, args []string) error {
	if len(args) > 0 && args[0] == "verify" {
		return auditVerify(e, args[1:])
	}
	fs := cmdenv.Flags("audit")
	var q client.AuditQuery
	fs.StringVar(&q.Box, "box", "", "entries about this box")
	fs.StringVar(&q.User, "user", "", "entries of this user's actions")
	fs.StringVar(&q.Action, "action", "", "this action, or a kind of them (box picks box.create, box.stop...)")
	fs.StringVar(&q.Since, "since", "", "entries from this long ago (90m, 1h, 2d) or this time on")
	asJSON := fs.Bool("json", false, "print JSON (one entry per line with -f)")
	follow := fs.BoolP("follow", "f", false, "keep printing entries as they are recorded")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cmdenv.Usagef("unexpected %q: 'paddock audit [--box B] [--user U] [--action A] [--since 1h] [--json] [-f]' or 'paddock audit verify'", fs.Arg(0))
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	es, err := c.Audit(e.Ctx, q)
	if err != nil {
		return err
	}
	if *asJSON && !*follow {
		return cmdenv.PrintJSON(e.Stdout, es)
	}
	header := !*asJSON
	show := func(es []api.AuditEntry) error {
		if *asJSON {
			for _, en := range es {
				if err := cmdenv.PrintJSONLine(e.Stdout, en); err != nil {
					return err
				}
			}
			return nil
		}
		err := auditTable(e.Stdout, es, header)
		header = false
		return err
	}
	if err := show(es); err != nil || !*follow {
		return err
	}
	q.Since = ""
	for {
		if len(es) > 0 {
			q.After = es[len(es)-1].Seq
		}
		select {
		case <-e.Ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
		if es, err = c.Audit(e.Ctx, q); err != nil {
			return err
		}
		if err := show(es); err != nil {
			return err
		}
	}
}

// auditTable prints entries as a table, its columns in line (with the
// header above them, if header).
func auditTable(w io.Writer, es []api.AuditEntry, header bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if header {
		fmt.Fprintln(tw, "#\tTIME\tUSER\tACTION\tON\tRESULT\tDETAIL")
	}
	for _, en := range es {
		result, detail := auditResult(en)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", en.Seq, en.At.Local().Format(time.DateTime), cmdenv.Dash(en.User), en.Action, cmdenv.Dash(auditWhat(en)), result, detail)
	}
	return tw.Flush()
}

// auditWhat is what an entry is about: its box, or its object.
func auditWhat(en api.AuditEntry) string {
	if en.Box != "" {
		return "box/" + en.Box
	}
	return en.Object
}

// auditShortResult is the longest result the RESULT column holds; a
// longer one (an error's words) begins the DETAIL column, the last, where
// its length pushes no other column out of line.
const auditShortResult = 16

// auditResult is an entry's RESULT and DETAIL columns.
func auditResult(en api.AuditEntry) (result, detail string) {
	detail = auditDetail(en)
	if utf8.RuneCountInString(en.Result) <= auditShortResult {
		return en.Result, detail
	}
	return "failed", strings.TrimSpace(en.Result + "; " + detail)
}

// auditDetail is an entry's details, and where it came from, on one line:
// its JSON as it was sent, without the escapes JSON may put in for HTML
// ("&&" reads as itself).
func auditDetail(en api.AuditEntry) string {
	var parts []string
	if len(en.Detail) > 0 {
		parts = append(parts, plainJSON(en.Detail))
	}
	if en.Via != "" {
		parts = append(parts, "via "+en.Via)
	}
	if en.Addr != "" {
		parts = append(parts, "from "+en.Addr)
	}
	return strings.Join(parts, " ")
}

func auditVerify(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("audit verify")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	witnesses, seen, key, err := auditWitness(e)
	if err != nil {
		return err
	}
	r, err := c.VerifyAudit(e.Ctx, seen)
	if err != nil {
		return err
	}
	// The head is kept as the witness of the next check; a broken log
	// keeps the witness that showed it.
	if r.OK && r.Head != nil {
		witnesses[key] = *r.Head
		b, _ := json.MarshalIndent(witnesses, "", "  ")
		p, err := auditWitnessPath(e)
		if err != nil {
			return err
		}
		if err := cmdenv.WriteSetting(p, append(b, '\n'), true); err != nil {
			return err
		}
	}
	if *asJSON {
		if err := cmdenv.PrintJSON(e.Stdout, r); err != nil {
			return err
		}
	} else if r.OK {
		fmt.Fprintf(e.Stdout, "the audit log chains: %d entries, %d to %d\n", r.Entries, r.First, r.Last)
		if seen != nil {
			fmt.Fprintf(e.Stdout, "and holds entry %d as this computer saw it at its last check\n", seen.Seq)
		}
	} else {
		fmt.Fprintf(e.Stdout, "the audit log is broken at entry %d: %s\n(%d entries chain before it, from %d)\n", r.Broken.Seq, r.Broken.Reason, r.Entries, r.First)
	}
	if !r.OK {
		return cmdenv.ExitError{Code: 1}
	}
	return nil
}

// auditWitnessPath is the file of the audit logs' heads this CLI saw at
// its checks, beside config.json.
func auditWitnessPath(e *cmdenv.Env) (string, error) {
	p, err := e.ConfigPath()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(p), "audit-witness.json"), nil
}

// auditWitness is what 'audit verify' keeps of each server's audit log
// (its head at the last check, by the server's address), this server's
// entry of it (nil: none yet) and that address: a witness outside the
// server, which a log cut off at its end, or wiped, no longer holds.
func auditWitness(e *cmdenv.Env) (map[string]api.AuditMark, *api.AuditMark, string, error) {
	all := map[string]api.AuditMark{}
	s, err := e.Load()
	if err != nil {
		return nil, nil, "", err
	}
	key := e.Server(s)
	p, err := auditWitnessPath(e)
	if err != nil {
		return nil, nil, "", err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return all, nil, key, nil
	} else if err != nil {
		return nil, nil, "", err
	}
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, nil, "", fmt.Errorf("%s: %w", p, err)
	}
	if m, ok := all[key]; ok {
		return all, &m, key, nil
	}
	return all, nil, key, nil
}

// plainJSON is raw JSON compacted and without HTML escapes (\u0026,
// \u003c, \u003e are written as &, <, >); raw as it is when it does not
// parse.
func plainJSON(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
