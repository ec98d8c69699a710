package service

import (
	"fmt"
	"testing"
)

// Lines as a box's kernel writes them: a server on 0.0.0.0:8080, one on
// 127.0.0.1:5173 only, one on [::]:3000 and 127.0.0.1:3000, a client
// connection (not listening), and the same port on two addresses.
const procNetSample = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0100007F:1435 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   3: 0200D60A:A2C4 0100D60A:0035 01 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
   4: 0200D60A:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0 100 0 0 10 0
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6 1 0 100 0 0 10 0
   1: 00000000000000000000000001000000:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 7 1 0 100 0 0 10 0
`

func TestListeningPorts(t *testing.T) {
	got := fmt.Sprint(ListeningPorts(procNetSample))
	want := "[{3000 ::  } {5173 127.0.0.1  } {8080 0.0.0.0  } {8081 10.214.0.2  } {9090 ::1  }]"
	if got != want {
		t.Fatalf("ports:\n got %s\nwant %s", got, want)
	}
}
