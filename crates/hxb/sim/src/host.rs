//! A node's host CPU: what each piece of protocol work costs the single processor of a
//! PACS-CS node (seed 004 §2.1: single-processor nodes; §2.3: protocol processing runs on the
//! host CPU, not the NIC).
//!
//! The CPU is one server (see `world`): it follows the core's call order, sending everything
//! the core has to send before it takes the next received frame, so a receiver answers each
//! DATA packet with an ACK unless it has DATA of its own to carry it. The costs are a set: PM/Ethernet-HXB's zero-copy path, or PM/
//! Ethernet Network Trunking's copying path with its locked queue (§3.3, §5.1), with an optional
//! MPI layer's per-packet processing on top (§5.4).

use base::SimTime;
use hxb_proto::{Header, Kind};

/// Host CPU time per piece of protocol work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCosts {
    /// Sending one DATA packet (library, system call, driver, descriptor).
    pub send_packet: SimTime,
    /// Receiving one DATA packet (interrupt, driver, receive array, delivery to the process).
    pub recv_packet: SimTime,
    /// Added to each DATA packet sent or received per NIC port in use (Table 4: +0.07 us/link).
    pub per_link: SimTime,
    /// Sending one header-only ACK.
    pub ack_send: SimTime,
    /// Receiving one header-only ACK.
    pub ack_recv: SimTime,
    /// Relaying one frame (receive, rewrite the header, resend the same buffer; §3.4).
    pub relay: SimTime,
    /// Delay from the end of a packet's receive processing to the process seeing its message
    /// (not CPU time: the waiting process resumes).
    pub wakeup: SimTime,
    /// Receive-side copy rate, for a stack that copies (NT); `None` for zero-copy receive.
    pub copy_bytes_per_second: Option<u64>,
    /// Per-packet processing of a layer above (MPI), on every DATA packet this node sends or
    /// has delivered.
    pub app_packet: SimTime,
}

impl HostCosts {
    /// The same costs with `per_packet` of upper-layer processing on every DATA packet.
    pub fn with_app(self, per_packet: SimTime) -> HostCosts {
        HostCosts { app_packet: per_packet, ..self }
    }

    fn data(&self, ports: u16) -> SimTime {
        SimTime::from_ps(self.per_link.as_ps() * u64::from(ports)) + self.app_packet
    }

    /// CPU time to handle a received `frame` at node `me` with `ports` NIC ports in use.
    pub fn receive(&self, frame: &[u8], me: hxb_proto::Coord, ports: u16) -> SimTime {
        match Header::parse(frame) {
            Ok(h) if h.dst != me => self.relay,
            Ok(h) if h.kind == Kind::Ack => self.ack_recv,
            Ok(h) => {
                let copy =
                    self.copy_bytes_per_second.map_or(SimTime::ZERO, |rate| SimTime::for_bytes(u64::from(h.len), rate));
                self.recv_packet + self.data(ports) + copy
            }
            // A frame the core refuses still costs the driver a look.
            Err(_) => self.ack_recv,
        }
    }

    /// CPU time to send `frame` (as written by `poll_transmit`); relays were paid on receipt.
    pub fn transmit(&self, frame: &[u8], relay: bool, ports: u16) -> SimTime {
        if relay {
            return SimTime::ZERO;
        }
        match Header::parse(frame) {
            Ok(h) if h.kind == Kind::Ack => self.ack_send,
            _ => self.send_packet + self.data(ports),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hxb_proto::{Config, Coord, Grid, Node};

    #[test]
    fn costs_follow_what_the_frame_is() {
        let c = HostCosts {
            send_packet: SimTime::from_ns(2000),
            recv_packet: SimTime::from_ns(1500),
            per_link: SimTime::from_ns(70),
            ack_send: SimTime::from_ns(300),
            ack_recv: SimTime::from_ns(200),
            relay: SimTime::from_ns(3000),
            wakeup: SimTime::ZERO,
            copy_bytes_per_second: Some(1_000_000_000),
            app_packet: SimTime::ZERO,
        };
        let cfg =
            |coord| Config { grid: Grid(Coord::new(2, 2, 1)), coord, links_per_dim: 2, mtu: 1000, rto_ps: 1 << 40 };
        let (a, b, far) = (Coord::new(0, 0, 0), Coord::new(1, 0, 0), Coord::new(1, 1, 0));
        let mut na = Node::new(cfg(a)).unwrap();
        na.send(b, &[7; 1000]).unwrap();
        na.send(far, b"x").unwrap();
        let mut buf = vec![0; na.frame_capacity()];
        let t = na.poll_transmit(0, &mut buf).unwrap();
        let data = buf[..t.len].to_vec();
        assert_eq!(c.transmit(&data, false, 2), SimTime::from_ns(2140));
        // 1000 B copied at 1 GB/s for a copying stack.
        assert_eq!(c.receive(&data, b, 2), SimTime::from_ns(1500 + 140 + 1000));
        assert_eq!(c.with_app(SimTime::from_us(6)).receive(&data, b, 2), SimTime::from_ns(1640 + 1000 + 6000));
        let t = na.poll_transmit(0, &mut buf).unwrap();
        assert_eq!(c.receive(&buf[..t.len], b, 2), SimTime::from_ns(3000), "b relays toward (1,1,0)");
        let mut nb = Node::new(cfg(b)).unwrap();
        nb.handle_frame(0, 0, hxb_proto::BufferId::new(1).unwrap(), &data).unwrap();
        let t = nb.poll_transmit(0, &mut buf).unwrap();
        assert_eq!(c.transmit(&buf[..t.len], false, 2), SimTime::from_ns(300), "a pure ACK");
        assert_eq!(c.receive(&buf[..t.len], a, 2), SimTime::from_ns(200));
        assert_eq!(c.receive(b"garbage", a, 2), SimTime::from_ns(200));
    }
}
