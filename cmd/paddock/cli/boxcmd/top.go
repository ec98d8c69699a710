package boxcmd

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/cmd/paddock/cli/cmdenv"
)

// topEvery is how often a live top asks again.
const topEvery = 2 * time.Second

// topSorts are top's --sort columns: each orders the most first (names:
// A to Z).
var topSorts = map[string]func(a, b api.Sample) int{
	"cpu":    func(a, b api.Sample) int { return cmp.Compare(b.CPU, a.CPU) },
	"memory": func(a, b api.Sample) int { return cmp.Compare(b.Memory, a.Memory) },
	"disk":   func(a, b api.Sample) int { return cmp.Compare(b.Disk, a.Disk) },
	"net":    func(a, b api.Sample) int { return cmp.Compare(b.NetRxRate+b.NetTxRate, a.NetRxRate+a.NetTxRate) },
	"procs":  func(a, b api.Sample) int { return cmp.Compare(b.Processes, a.Processes) },
	"name":   func(a, b api.Sample) int { return cmp.Compare(a.Box, b.Box) },
}

// Top shows what the running boxes use: live on a terminal (until
// Ctrl-C), once otherwise or with --once; --json prints one sample of
// each. With a box, its samples since --since.
func Top(e *cmdenv.Env, args []string) error {
	fs := cmdenv.Flags("top")
	sortBy := fs.String("sort", "cpu", "order by cpu, memory, disk, net, procs or name")
	since := fs.String("since", "", "with a box: its samples from this long ago (90m, 1h, 2d) or this time on (default 15m)")
	once := fs.Bool("once", false, "print once and exit (what top does when its output is not a terminal)")
	asJSON := fs.Bool("json", false, "print JSON: one sample of each running box (with a box, its samples)")
	if err := cmdenv.Parse(fs, args); err != nil {
		return err
	}
	order, ok := topSorts[*sortBy]
	if !ok {
		return cmdenv.Invalidf("--sort %q: give cpu, memory, disk, net, procs or name", *sortBy)
	}
	if len(fs.Args()) > 1 {
		return cmdenv.Usagef("give at most one box")
	}
	if len(fs.Args()) == 1 {
		name, c, err := e.Connect(fs.Args()[0])
		if err != nil {
			return err
		}
		m, err := c.BoxMetrics(e.Ctx, name, *since)
		if err != nil {
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, m)
		}
		if len(m.Samples) == 0 {
			fmt.Fprintf(e.Stdout, "no samples of %s in that time: it was not running (samples are taken every %s while it runs)\n", name, m.Interval)
			return nil
		}
		tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "TIME\tCPU\tMEMORY\tDISK\tNET IN\tNET OUT\tPROCS\t")
		for _, s := range m.Samples {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.At.Local().Format("15:04:05"), cpuText(s.CPU), cmdenv.SizeText(s.Memory), cmdenv.SizeText(s.Disk), rateText(s.NetRxRate), rateText(s.NetTxRate), s.Processes)
		}
		return tw.Flush()
	}
	if *since != "" {
		return cmdenv.Usagef("--since goes with a box: paddock top BOX --since 1h")
	}
	c, err := e.Client()
	if err != nil {
		return err
	}
	live := !*once && !*asJSON && cmdenv.IsTerminal(e.Stdout)
	for {
		ms, err := c.Metrics(e.Ctx)
		if err != nil {
			if e.Ctx.Err() != nil && live {
				return nil
			}
			return err
		}
		if *asJSON {
			return cmdenv.PrintJSON(e.Stdout, ms)
		}
		slices.SortStableFunc(ms, func(a, b api.Sample) int {
			if o := order(a, b); o != 0 {
				return o
			}
			return cmp.Compare(a.Box, b.Box)
		})
		if live {
			fmt.Fprint(e.Stdout, "\x1b[H\x1b[2J") // home, clear
			fmt.Fprintf(e.Stdout, "paddock top: %d running, sorted by %s, every %s (Ctrl-C ends)\n\n", len(ms), *sortBy, topEvery)
		}
		if err := topTable(e.Stdout, ms); err != nil || !live {
			return err
		}
		select {
		case <-e.Ctx.Done():
			return nil
		case <-time.After(topEvery):
		}
	}
}

// topTable prints one line per box.
func topTable(w io.Writer, ms []api.Sample) error {
	if len(ms) == 0 {
		_, err := fmt.Fprintln(w, "no running boxes (or none sampled yet)")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "BOX\tCPU\tMEMORY\tOF\tDISK\tOF\tNET IN\tNET OUT\tPROCS\t")
	for _, s := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", s.Box, cpuText(s.CPU), cmdenv.SizeText(s.Memory), limitText(s.MemoryLimit),
			cmdenv.SizeText(s.Disk), limitText(s.DiskLimit), rateText(s.NetRxRate), rateText(s.NetTxRate), s.Processes)
	}
	return tw.Flush()
}

// usageLines are show's lines on what a running box uses now.
func usageLines(w io.Writer, s api.Sample) {
	fmt.Fprintf(w, "cpu:\t%s of one CPU\n", cpuText(s.CPU))
	fmt.Fprintf(w, "memory:\t%s of %s\n", cmdenv.SizeText(s.Memory), limitText(s.MemoryLimit))
	fmt.Fprintf(w, "disk:\t%s of %s\n", cmdenv.SizeText(s.Disk), limitText(s.DiskLimit))
	fmt.Fprintf(w, "network:\t%s in, %s out (now %s in, %s out)\n", cmdenv.SizeText(s.NetRx), cmdenv.SizeText(s.NetTx), rateText(s.NetRxRate), rateText(s.NetTxRate))
	fmt.Fprintf(w, "processes:\t%d\n", s.Processes)
}

func cpuText(p float64) string { return fmt.Sprintf("%.1f%%", p) }

func limitText(n int64) string {
	if n <= 0 {
		return "no bound"
	}
	return cmdenv.SizeText(n)
}

func rateText(r float64) string { return cmdenv.SizeText(int64(r)) + "/s" }
