package service

// Sampler is what the core shares with the sampler of boxes' use
// (package metrics): the disk check's measure is the samples' disk
// figure. (The events stream follows its passes itself: package events.)
type Sampler interface {
	// NoteDisk takes a box's disk as the disk check measured it.
	NoteDisk(box string, bytes int64)
}

// noteDisk hands the disk check's measure to the sampler.
func (s *Service) noteDisk(name string, bytes int64) {
	if s.Metrics != nil {
		s.Metrics.NoteDisk(name, bytes)
	}
}
