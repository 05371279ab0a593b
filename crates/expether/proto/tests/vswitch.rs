//! The distributed virtual PCIe switch (seed 002 §3.3.1, Table 3.1): the hot-plug events each
//! host sees, the limits, and, over random command sequences, that a host's view built from its
//! events alone matches the switch and never shows a device that another host shows too.

use expether_proto::{ExpError, Mac, SwitchEvent, VirtualSwitch, MAX_HOSTS};
use proptest::prelude::*;
use std::collections::BTreeMap;
use SwitchEvent::{HotPlug, HotRemove};

fn host(i: u16) -> Mac {
    Mac([2, 0, 0, 1, (i >> 8) as u8, i as u8])
}

fn dev(i: u16) -> Mac {
    Mac([2, 0, 0, 2, (i >> 8) as u8, i as u8])
}

fn drain(s: &mut VirtualSwitch) -> Vec<SwitchEvent> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

fn on(events: &[SwitchEvent], vlan: u16) -> Vec<SwitchEvent> {
    events.iter().copied().filter(|e| e.host() == vlan).collect()
}

#[test]
fn assignment_and_move_give_remove_before_plug() {
    let mut s = VirtualSwitch::new(8).unwrap();
    s.join_host(host(1), 10).unwrap();
    s.join_host(host(2), 20).unwrap();
    for i in 0..3 {
        s.join_device(dev(i)).unwrap();
    }
    assert_eq!(drain(&mut s), []);
    assert_eq!(s.assign(dev(0), 10), Ok(0));
    assert_eq!(s.assign(dev(1), 10), Ok(1));
    assert_eq!(s.assign(dev(2), 20), Ok(0));
    assert_eq!(
        drain(&mut s),
        [
            HotPlug { host: 10, slot: 0, device: dev(0) },
            HotPlug { host: 10, slot: 1, device: dev(1) },
            HotPlug { host: 20, slot: 0, device: dev(2) },
        ]
    );
    // dev(0) moves from host 10 to host 20: removed there first, then plugged at the next free slot.
    assert_eq!(s.assign(dev(0), 20), Ok(1));
    let ev = drain(&mut s);
    assert_eq!(ev, [HotRemove { host: 10, slot: 0, device: dev(0) }, HotPlug { host: 20, slot: 1, device: dev(0) }]);
    assert_eq!(on(&ev, 10), [HotRemove { host: 10, slot: 0, device: dev(0) }]);
    assert_eq!(on(&ev, 20), [HotPlug { host: 20, slot: 1, device: dev(0) }]);
    assert_eq!(s.devices_of(10), [(1, dev(1))]);
    assert_eq!(s.devices_of(20), [(0, dev(2)), (1, dev(0))]);
    assert_eq!(s.host_of(dev(0)), Some((20, 1)));
    // Repeating an assignment or releasing a pooled device changes nothing.
    assert_eq!(s.assign(dev(0), 20), Ok(1));
    s.release(dev(1)).unwrap();
    assert_eq!(s.release(dev(1)), Ok(None));
    assert_eq!(drain(&mut s), [HotRemove { host: 10, slot: 1, device: dev(1) }]);
    assert_eq!(s.host_of(dev(1)), None);
}

#[test]
fn slots_are_reused_lowest_first() {
    let mut s = VirtualSwitch::new(4).unwrap();
    s.join_host(host(0), 5).unwrap();
    for i in 0..5 {
        s.join_device(dev(i)).unwrap();
    }
    for i in 0..4 {
        assert_eq!(s.assign(dev(i), 5), Ok(i as u8));
    }
    assert_eq!(s.assign(dev(4), 5), Err(ExpError::PortsFull(5, 4)));
    assert_eq!(s.release(dev(2)), Ok(Some((5, 2))));
    assert_eq!(s.release(dev(1)), Ok(Some((5, 1))));
    assert_eq!(s.assign(dev(4), 5), Ok(1));
    assert_eq!(s.assign(dev(2), 5), Ok(2));
    let ev = drain(&mut s);
    assert_eq!(
        ev[4..],
        [
            HotRemove { host: 5, slot: 2, device: dev(2) },
            HotRemove { host: 5, slot: 1, device: dev(1) },
            HotPlug { host: 5, slot: 1, device: dev(4) },
            HotPlug { host: 5, slot: 2, device: dev(2) },
        ]
    );
}

#[test]
fn the_33rd_device_is_refused_and_nothing_moves() {
    let mut s = VirtualSwitch::new(32).unwrap();
    s.join_host(host(0), 1).unwrap();
    s.join_host(host(1), 2).unwrap();
    for i in 0..33 {
        s.join_device(dev(i)).unwrap();
    }
    for i in 0..32 {
        assert_eq!(s.assign(dev(i), 1), Ok(i as u8));
    }
    assert_eq!(s.assign(dev(32), 2), Ok(0));
    drain(&mut s);
    let err = s.assign(dev(32), 1).unwrap_err();
    assert_eq!(err, ExpError::PortsFull(1, 32));
    assert_eq!(
        err.to_string(),
        "the host on VLAN 1 has all 32 downstream ports in use (at most 32 devices per host, seed 002 Table 3.1)"
    );
    // The refused move leaves the device where it was, with no event on either host.
    assert_eq!(s.host_of(dev(32)), Some((2, 0)));
    assert_eq!(drain(&mut s), []);
    assert!(VirtualSwitch::new(33).unwrap_err().to_string().contains("1..=32 downstream ports"));
    assert!(VirtualSwitch::new(0).is_err());
}

#[test]
fn the_4097th_host_is_refused() {
    let mut s = VirtualSwitch::new(1).unwrap();
    assert_eq!(s.join_host(host(0), 4096), Err(ExpError::VlanRange(4096)));
    assert_eq!(ExpError::VlanRange(4096).to_string(), "VLAN id 4096 exceeds 12 bits (0..=4095)");
    for v in 0..4096u16 {
        s.join_host(host(v), v).unwrap();
    }
    assert_eq!(s.host_count(), MAX_HOSTS);
    let err = s.join_host(host(4096), 7).unwrap_err();
    assert_eq!(err, ExpError::HostsFull);
    assert_eq!(
        err.to_string(),
        "all 4096 VLAN ids already have a host bridge (at most 4096 hosts, seed 002 Table 3.1)"
    );
    s.leave_host(7).unwrap();
    assert_eq!(s.join_host(host(4096), 8), Err(ExpError::VlanTaken(8, host(8))));
    assert_eq!(s.join_host(host(9), 7), Err(ExpError::BridgeKnown(host(9))));
    assert_eq!(s.join_host(host(4096), 7), Ok(0));
}

#[test]
fn bad_commands_get_clear_errors() {
    let mut s = VirtualSwitch::new(2).unwrap();
    s.join_host(host(0), 3).unwrap();
    s.join_device(dev(0)).unwrap();
    assert_eq!(s.join_device(dev(0)), Err(ExpError::BridgeKnown(dev(0))));
    assert_eq!(s.join_device(host(0)), Err(ExpError::BridgeKnown(host(0))));
    assert_eq!(s.assign(dev(1), 3), Err(ExpError::UnknownDevice(dev(1))));
    assert_eq!(s.assign(dev(0), 4), Err(ExpError::UnknownHost(4)));
    assert_eq!(s.assign(dev(0), 5000), Err(ExpError::VlanRange(5000)));
    assert_eq!(s.release(dev(1)), Err(ExpError::UnknownDevice(dev(1))));
    assert_eq!(s.leave_host(4), Err(ExpError::UnknownHost(4)));
    assert_eq!(s.leave_device(dev(1)), Err(ExpError::UnknownDevice(dev(1))));
    assert_eq!(ExpError::UnknownHost(4).to_string(), "no host bridge on VLAN 4");
    assert_eq!(drain(&mut s), []);
}

#[test]
fn a_leaving_device_is_hot_removed_and_a_returning_host_finds_its_devices() {
    let mut s = VirtualSwitch::new(4).unwrap();
    s.join_host(host(0), 3).unwrap();
    for i in 0..3 {
        s.join_device(dev(i)).unwrap();
        s.assign(dev(i), 3).unwrap();
    }
    s.leave_device(dev(1)).unwrap();
    assert_eq!(drain(&mut s)[3..], [HotRemove { host: 3, slot: 1, device: dev(1) }]);
    assert_eq!(s.device_count(), 2);
    // The host bridge restarts: queued events for it are dropped, the device bridges keep VLAN 3.
    s.assign(dev(0), 3).unwrap();
    s.release(dev(0)).unwrap();
    s.assign(dev(0), 3).unwrap();
    s.leave_host(3).unwrap();
    assert_eq!(drain(&mut s), []);
    assert_eq!(s.host_of(dev(2)), None);
    assert_eq!(s.assign(dev(1), 3), Err(ExpError::UnknownDevice(dev(1))));
    assert_eq!(s.join_host(host(0), 3), Ok(2));
    assert_eq!(
        drain(&mut s),
        [HotPlug { host: 3, slot: 0, device: dev(0) }, HotPlug { host: 3, slot: 2, device: dev(2) }]
    );
}

#[derive(Debug, Clone, Copy)]
enum Op {
    JoinHost(u16),
    LeaveHost(u16),
    JoinDevice(u16),
    LeaveDevice(u16),
    Assign(u16, u16),
    Release(u16),
}

fn op() -> impl Strategy<Value = Op> {
    // Few hosts, devices and ports so that the ports fill and commands collide.
    prop_oneof![
        1 => (0u16..4).prop_map(Op::JoinHost),
        1 => (0u16..4).prop_map(Op::LeaveHost),
        1 => (0u16..8).prop_map(Op::JoinDevice),
        1 => (0u16..8).prop_map(Op::LeaveDevice),
        6 => (0u16..8, 0u16..4).prop_map(|(d, h)| Op::Assign(d, h)),
        3 => (0u16..8).prop_map(Op::Release),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn no_device_is_ever_on_two_hosts(ops in proptest::collection::vec(op(), 1..80)) {
        let ports = 3u8;
        let mut s = VirtualSwitch::new(ports).unwrap();
        // What each present host has seen, built from its events alone: slot -> device.
        let mut views: BTreeMap<u16, BTreeMap<u8, Mac>> = BTreeMap::new();
        for o in ops {
            let before = format!("{:?}", (0..4).map(|h| s.devices_of(h)).collect::<Vec<_>>());
            let r = match o {
                Op::JoinHost(h) => s.join_host(host(h), h).map(|_| ()),
                Op::LeaveHost(h) => s.leave_host(h),
                Op::JoinDevice(d) => s.join_device(dev(d)),
                Op::LeaveDevice(d) => s.leave_device(dev(d)),
                Op::Assign(d, h) => s.assign(dev(d), h).map(|_| ()),
                Op::Release(d) => s.release(dev(d)).map(|_| ()),
            };
            let events = drain(&mut s);
            if r.is_err() {
                // A refusal changes nothing.
                prop_assert_eq!(&events, &vec![]);
                let after = format!("{:?}", (0..4).map(|h| s.devices_of(h)).collect::<Vec<_>>());
                prop_assert_eq!(before, after);
            }
            match o {
                Op::LeaveHost(h) if r.is_ok() => { views.remove(&h); }
                Op::JoinHost(h) if r.is_ok() => { views.insert(h, BTreeMap::new()); }
                _ => {}
            }
            for e in events {
                match e {
                    HotPlug { host: h, slot, device } => {
                        prop_assert!(slot < ports);
                        let view = views.get_mut(&h).expect("events only for present hosts");
                        if let Op::Assign(..) = o {
                            // An assigned device takes the lowest free slot, so freed slots are reused.
                            let lowest = (0..ports).find(|s| !view.contains_key(s));
                            prop_assert_eq!(Some(slot), lowest);
                        }
                        prop_assert!(view.insert(slot, device).is_none(), "slot {} of host {} plugged twice", slot, h);
                    }
                    HotRemove { host: h, slot, device } => {
                        let view = views.get_mut(&h).expect("events only for present hosts");
                        prop_assert_eq!(view.remove(&slot), Some(device));
                    }
                }
                // After every single event: no device seen by two hosts.
                let mut seen = BTreeMap::new();
                for (&h, view) in &views {
                    for d in view.values() {
                        if let Some(other) = seen.insert(*d, h) {
                            prop_assert!(false, "{} on hosts {} and {}", d, other, h);
                        }
                    }
                }
            }
            // Each host's view from its events is what the switch says it has.
            for (&h, view) in &views {
                let from_switch: Vec<(u8, Mac)> = s.devices_of(h);
                let from_events: Vec<(u8, Mac)> = view.iter().map(|(&s, &d)| (s, d)).collect();
                prop_assert_eq!(from_switch, from_events);
            }
        }
    }
}
