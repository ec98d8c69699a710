package service

import (
	"github.com/paddock-dev/paddock/appliance/store"
)

// boxState is everything the server keeps of a box outside the engine
// and the declared state, by the box's id or name. ForgetBox removes each
// when the box's tombstone goes, whatever removed the box (rm, a
// Boxfile's apply or destroy); a test removes a box every way and checks
// every item.
var boxState = []struct {
	What   string
	forget func(s *Service, t store.Tombstone, jobs []string)
}{
	{"staging leftovers", func(s *Service, t store.Tombstone, _ []string) {
		// The box's files went with it; a push to a later box of the same
		// name that is under way keeps its own.
		ls, _ := s.Store.Leftovers()
		for _, l := range ls {
			s.memMu.Lock()
			live := s.live[l]
			s.memMu.Unlock()
			if l.Kind == "box" && l.Target == t.Name && !live {
				s.Store.DoneLeftover(l)
			}
		}
	}},
}

// KeepsOfBox is how a capability that keeps state of a box outside the
// engine and the declared state (the desktop's gallery, the jobs' logs)
// has it go with the box: forget runs when the box's tombstone goes,
// with the ids of the box's jobs. what names it
// (the test of boxState's items names each).
func (s *Service) KeepsOfBox(what string, forget func(t store.Tombstone, jobs []string)) {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	s.kept = append(s.kept, keptOfBox{what, forget})
}

type keptOfBox struct {
	What   string
	forget func(t store.Tombstone, jobs []string)
}

// keptOfBox is what the capabilities keep of boxes (KeepsOfBox).
func (s *Service) keptOfBox() []keptOfBox {
	s.memMu.Lock()
	defer s.memMu.Unlock()
	return append([]keptOfBox(nil), s.kept...)
}

// ForgetBox removes what the server kept of a removed box (boxState and
// what the capabilities keep), once its tombstone went (the reconciler's
// Forget).
func (s *Service) ForgetBox(t store.Tombstone, jobs []string) {
	for _, st := range boxState {
		st.forget(s, t, jobs)
	}
	for _, k := range s.keptOfBox() {
		k.forget(t, jobs)
	}
}
