package store

import (
	"time"
)

// Sample is what a running box used at one moment (see package metrics
// for how each figure is read).
type Sample struct {
	Box string
	At  time.Time
	// CPU is the percentage of one CPU used since the sample before.
	CPU                 float64
	Memory, MemoryLimit int64
	Disk, DiskLimit     int64
	NetRx, NetTx        int64
	RxRate, TxRate      float64 // bytes a second since the sample before
	Processes           int
}

const sampleCols = `box, at, cpu, memory, memory_limit, disk, disk_limit, net_rx, net_tx, rx_rate, tx_rate, processes`

// AddSamples records samples, in one transaction.
func (s *Store) AddSamples(samples []Sample) error {
	if len(samples) == 0 {
		return nil
	}
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.Prepare(`INSERT INTO metrics (` + sampleCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, m := range samples {
		if _, err := st.Exec(m.Box, unix(m.At), m.CPU, m.Memory, m.MemoryLimit, m.Disk, m.DiskLimit, m.NetRx, m.NetTx, m.RxRate, m.TxRate, m.Processes); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Samples lists a box's samples taken at or after since, oldest first.
func (s *Store) Samples(box string, since time.Time) ([]Sample, error) {
	rows, err := s.q.Query(`SELECT `+sampleCols+` FROM metrics WHERE box=? AND at>=? ORDER BY at`, box, unix(since))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Sample{}
	for rows.Next() {
		var m Sample
		var at int64
		if err := rows.Scan(&m.Box, &at, &m.CPU, &m.Memory, &m.MemoryLimit, &m.Disk, &m.DiskLimit, &m.NetRx, &m.NetTx, &m.RxRate, &m.TxRate, &m.Processes); err != nil {
			return nil, err
		}
		m.At = fromUnix(at)
		out = append(out, m)
	}
	return out, rows.Err()
}

// ThinSamples drops the samples taken before keepUntil, and keeps of those
// taken before fullUntil the first of each box's minutes: a day of
// samples every few seconds would be thousands a box.
func (s *Store) ThinSamples(keepUntil, fullUntil time.Time) error {
	if _, err := s.q.Exec(`DELETE FROM metrics WHERE at < ?`, unix(keepUntil)); err != nil {
		return err
	}
	_, err := s.q.Exec(`DELETE FROM metrics WHERE at < ? AND rowid NOT IN
		(SELECT min(rowid) FROM metrics WHERE at < ? GROUP BY box, at / 60000)`, unix(fullUntil), unix(fullUntil))
	return err
}

// RecordOOM records what the metrics saw of the kernel's kills for a
// box's memory bound: seen is the box's own count now; kills, when more
// than none, were new at at. A box that changed nothing is not written
// (the events stream shows every write).
func (s *Store) RecordOOM(box string, seen, kills int64, at time.Time) error {
	if kills <= 0 {
		_, err := s.q.Exec(`UPDATE boxes SET oom_seen=? WHERE name=? AND oom_seen != ?`, seen, box, seen)
		return err
	}
	_, err := s.q.Exec(`UPDATE boxes SET oom_seen=?, oom_kills=oom_kills+?, oom_at=? WHERE name=?`, seen, kills, unix(at), box)
	return err
}
