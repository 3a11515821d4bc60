import AerieTesting

/// A peer connected by a hand-made didexchange handshake (AerieTesting's, shared with aerie-bench).
typealias TestPeer = HandMadePeer
