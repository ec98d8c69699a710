package service

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/api"
)

// Sampler is what the core shares with the sampler of boxes' use
// (package metrics): the events stream sends each pass's samples, and the
// disk check's measure is the samples' disk figure.
type Sampler interface {
	// Pass counts the sampling passes done; LatestSeen is the newest
	// pass's sample of each running box the caller of ctx sees.
	Pass() int64
	LatestSeen(ctx context.Context) ([]api.Sample, error)
	// NoteDisk takes a box's disk as the disk check measured it.
	NoteDisk(box string, bytes int64)
}

// noteDisk hands the disk check's measure to the sampler.
func (s *Service) noteDisk(name string, bytes int64) {
	if s.Metrics != nil {
		s.Metrics.NoteDisk(name, bytes)
	}
}

// metricsPass is the number of sampling passes done.
func (s *Service) metricsPass() int64 {
	if s.Metrics == nil {
		return 0
	}
	return s.Metrics.Pass()
}
