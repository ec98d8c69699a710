package api

import (
	"time"
)

// Sample is what a running box used at one moment: GET
// /v1/boxes/NAME/metrics, GET /v1/metrics, and the events stream's
// "metrics" events.
type Sample struct {
	Box string    `json:"box"`
	At  time.Time `json:"at"`
	// CPU is the percentage of one CPU the box's processes used since
	// the sample before (200: two CPUs busy).
	CPU float64 `json:"cpu_percent"`
	// Memory is what its processes hold, less the page cache the kernel
	// can drop; MemoryLimit is its bound (0: none).
	Memory      int64 `json:"memory_bytes"`
	MemoryLimit int64 `json:"memory_limit_bytes"`
	// Disk is what it has written (its writable layer and its
	// /var/lib/docker), as last measured (every disk_check_interval
	// with a disk bound, every metrics_disk_interval without);
	// DiskLimit is its type's disk_gib (0: none).
	Disk      int64 `json:"disk_bytes"`
	DiskLimit int64 `json:"disk_limit_bytes"`
	// NetRx and NetTx are the bytes its network took in and sent since
	// it started; the rates are bytes a second since the sample before.
	NetRx     int64   `json:"net_rx_bytes"`
	NetTx     int64   `json:"net_tx_bytes"`
	NetRxRate float64 `json:"net_rx_rate"`
	NetTxRate float64 `json:"net_tx_rate"`
	// Processes counts its processes (and threads).
	Processes int `json:"processes"`
}

// BoxMetrics is a box's samples (GET /v1/boxes/NAME/metrics).
type BoxMetrics struct {
	Box string `json:"box"`
	// Interval is how often a running box is sampled; samples older
	// than an hour are kept one a minute.
	Interval string `json:"interval"`
	// Samples are oldest first; the last is the newest (none: the box
	// did not run in that time).
	Samples []Sample `json:"samples"`
}
