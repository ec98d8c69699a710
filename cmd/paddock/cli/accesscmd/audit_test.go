package accesscmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
)

// The audit table's columns line up whatever an entry's result: a long
// error goes to the last column, where it pushes nothing out of line, and
// details read as they were sent (&& is not \u0026\u0026).
func TestAuditTableLinesUp(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	long := `422 Docker inside a box does not work on this server: its boxes run with runc, and a build runs in a box; set runtime = "sysbox-runc"`
	es := []api.AuditEntry{
		{Seq: 1, At: at, User: "owner", Action: "box.create", Box: "web", Result: "ok"},
		{Seq: 2, At: at, User: "owner", Action: "exec", Box: "web", Result: "opened", Detail: json.RawMessage(`{"argv":["sh","-c","make \u0026\u0026 make test \u003e log"]}`), Via: "token cli"},
		{Seq: 3, At: at, User: "owner", Action: "image.build", Object: "images/app", Result: long},
		{Seq: 14, At: at, Action: "signin", Result: "wrong user name or password"},
	}
	var b bytes.Buffer
	if err := auditTable(&b, es, true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	col := strings.Index(lines[0], "RESULT")
	detail := strings.Index(lines[0], "DETAIL")
	for _, l := range lines[1:] {
		if l[col-1] != ' ' || l[col] == ' ' || l[detail-1] != ' ' {
			t.Errorf("out of line with the header's RESULT (%d) and DETAIL (%d):\n%s\n%s", col, detail, lines[0], l)
		}
	}
	if detail-col > auditShortResult+2 {
		t.Errorf("the RESULT column is %d wide:\n%s", detail-col, b.String())
	}
	for _, want := range []string{`{"argv":["sh","-c","make && make test > log"]} via token cli`, "failed  " + long, "failed  wrong user name or password"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table does not hold %q:\n%s", want, b.String())
		}
	}
}
