//! Owns what a pipe reads of a host's packet (`PacketMeta`); not parsing its bytes (netloom_packet).
//!
//! The ECN field and the flow hash come from `netloom_packet`; this is where they become the
//! engine's `PacketMeta`, which netloom-packet does not know.

use netloom_link::PacketMeta;
use netloom_packet::{ecn, ip::flow_hash};

/// What a pipe needs to know of a packet whose header `netloom_packet::ip::endpoints` accepted:
/// its ECN field, and its flow as a hash of addresses, protocol and (TCP, UDP) ports, as
/// FQ-CoDel hashes packets to its queues.
pub fn meta(packet: &[u8]) -> PacketMeta {
    PacketMeta {
        ecn: ecn(packet),
        flow: flow_hash(packet),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netloom_link::Ecn;

    #[test]
    fn a_packet_meta_carries_the_ecn_field_and_the_flow_hash() {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[1] = 0x02; // ECT(0)
        p[2..4].copy_from_slice(&28u16.to_be_bytes());
        p[9] = 6;
        let m = meta(&p);
        assert_eq!(m.flow, flow_hash(&p));
        assert_eq!(m.ecn, Ecn::Ect0);
    }
}
