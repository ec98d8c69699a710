package service

import (
	"context"

	"github.com/paddock-dev/paddock/appliance/placement"
	"github.com/paddock-dev/paddock/appliance/store"
)

// AttachAll makes every joined node reachable (at start), and the
// swarm's word on each node (LookAtNodes) the driver's: a server the
// swarm says is down is down for the reconciler too.
func (s *Service) AttachAll() error {
	if s.Cluster == nil {
		return nil
	}
	ns, err := s.Store.ListNodes()
	if err != nil {
		return err
	}
	return s.Cluster.AttachAll(ns)
}

// LookAtNodes asks the swarm how the servers are, and every node's agent
// what it has (node.Cluster's Look), for placement and 'paddock nodes'.
func (s *Service) LookAtNodes(ctx context.Context) {
	if s.Cluster == nil {
		return
	}
	if ns, err := s.Store.ListNodes(); err == nil {
		s.Cluster.Look(ctx, ns)
	}
}

// placer is where boxes go, as the core stands now.
func (s *Service) placer() placement.Placer {
	return placement.Placer{Cluster: s.Cluster, Types: s.Cfg.Types, Subnet: s.Net.Subnet}
}

// LocalNodeName is the control plane's own server's name ("local" when
// it has none).
func (s *Service) LocalNodeName() string { return s.placer().LocalName() }

// NodeDisplay is the name users see for a box's node.
func (s *Service) NodeDisplay(n string) string { return s.placer().Display(n) }

// place puts a new box (or pool box) on a node (placement.Placer.Place).
func (s *Service) place(tx *store.Tx, b *store.Box) error { return s.PlaceOn(tx, b, "") }

// PlaceOn is place on the server named want, when not empty.
func (s *Service) PlaceOn(tx *store.Tx, b *store.Box, want string) error {
	return s.placer().Place(tx, b, want)
}

// Wanted is the node a user named: one that is up.
func (s *Service) Wanted(want string, ns []store.Node) (string, error) {
	return s.placer().Wanted(want, ns)
}

// Address gives a box a free address in its node's box network.
func (s *Service) Address(tx *store.Tx, b *store.Box, ns []store.Node) error {
	return s.placer().Address(tx, b, ns)
}

// DriveNode is the node a new drive goes on.
func (s *Service) DriveNode(tx *store.Tx) (string, error) { return s.placer().DriveNode(tx) }

// Roomiest is the node that is up, with labels, with the most memory not
// promised to its boxes.
func (s *Service) Roomiest(tx *store.Tx, ns []store.Node, labels map[string]string) (string, error) {
	return s.placer().Roomiest(tx, ns, labels)
}

// boxNode is the node a box shows: none on a single server.
func (s *Service) boxNode(n string) string {
	if n != "" {
		return n
	}
	// The nodes attached are those that joined: no query for each box.
	if s.Cluster != nil && s.Cluster.Driver.Len() > 1 {
		return s.LocalNodeName()
	}
	return ""
}
