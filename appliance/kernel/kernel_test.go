package kernel

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A run is checked before anything runs in the box; a good one runs in
// its language's own context unless it names one, within its timeout
// and two minutes more.
func TestRunOp(t *testing.T) {
	for _, c := range []struct {
		post  api.RunPost
		field string
		says  string
	}{
		{api.RunPost{Code: "1", Lang: "cobol"}, "lang", `language "cobol"`},
		{api.RunPost{Code: "1", Context: "Bad_Name"}, "context", `context name "Bad_Name"`},
		{api.RunPost{Code: "1", Context: "-x"}, "context", `context name "-x"`},
		{api.RunPost{Code: strings.Repeat("x", MaxCode+1)}, "code", "at most 1048576"},
		{api.RunPost{Code: "1", Timeout: "soon"}, "timeout", "must be seconds or a duration"},
		{api.RunPost{Code: "1", Timeout: "2h"}, "timeout", "give up to 1h0m0s"},
	} {
		_, _, err := RunOp(c.post)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInvalid || ae.Field != c.field || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%+v: %v, want %s saying %q", c.post.Context, err, c.field, c.says)
		}
	}
	op, bound, err := RunOp(api.RunPost{Code: "x", Lang: "node", Timeout: "90s"})
	if err != nil || op.Name != "javascript" || !op.Auto || op.Timeout != 90 || bound != 90*time.Second+2*time.Minute {
		t.Fatalf("a run without a context: %+v %s %v", op, bound, err)
	}
	op, _, err = RunOp(api.RunPost{Code: "x", Context: "scratch"})
	if err != nil || op.Name != "scratch" || op.Auto || op.Lang != "python" || op.Timeout != 60 {
		t.Fatalf("a run in a named context: %+v %v", op, err)
	}
}

// A streamed run's output is event lines, however its writes cut them,
// then the outcome: the events go to each in order, the outcome alone to
// the buffer.
func TestEvents(t *testing.T) {
	var got []api.RunEvent
	var out strings.Builder
	e := &events{out: &out, each: func(ev api.RunEvent) { got = append(got, ev) }}
	all := `{"event": {"started": true}}` + "\n" + `{"event": {"stdout": "a\n"}}` + "\n" + `{"event": {"display": {"text/plain": "x"}}}` + "\n" + `{"run": {"stdout": "a\n"}}`
	for i := 0; i < len(all); i += 7 {
		e.Write([]byte(all[i:min(i+7, len(all))]))
	}
	if len(got) != 3 || out.Len() != 0 {
		t.Fatalf("before the end: %+v, %q", got, out.String())
	}
	e.flush()
	if len(got) != 3 || !got[0].Started || got[1].Stdout != "a\n" || got[2].Display["text/plain"] != "x" {
		t.Fatalf("events: %+v", got)
	}
	if out.String() != `{"run": {"stdout": "a\n"}}` {
		t.Fatalf("outcome: %q", out.String())
	}
}
