//! The long-running system of `expether-system`: a device assigned to a host serves that
//! host's verified block I/O; moved to another host, the old host fails by its view and on the
//! wire (the device bridge refuses its VLAN), the new one succeeds. Skipped, with the reason,
//! when real links are unavailable.

use expether_net::system::{device_mac, host_mac, System, SystemPlan, Target};

#[test]
fn a_moved_device_refuses_the_old_hosts_vlan() {
    if let Some(why) = ether_net::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut sys = System::start(SystemPlan { hosts: 2, devices: 1, ..SystemPlan::default() }).expect("system");
    let (a, b, d) = (host_mac(0), host_mac(1), device_mac(0));
    sys.set_host(a, Some(10)).unwrap();
    sys.set_host(b, Some(20)).unwrap();
    assert!(sys.set_host(b, Some(10)).is_err(), "two hosts on one VLAN");
    assert!(sys.set_device(d, Some((30, 0))).is_err(), "a VLAN without a host");
    let ev = sys.set_device(d, Some((10, 3))).unwrap();
    assert_eq!(ev.iter().map(|e| (e.kind, e.vlan, e.slot)).collect::<Vec<_>>(), [("hot-plug", 10, 3)]);
    let r = sys.io(a, Target::Slot(3), 32).expect("A's I/O");
    assert_eq!((r.device, r.blocks), (d, 32));
    let ev = sys.set_device(d, Some((20, 0))).unwrap();
    assert_eq!(
        ev.iter().map(|e| (e.kind, e.vlan, e.slot)).collect::<Vec<_>>(),
        [("hot-remove", 10, 3), ("hot-plug", 20, 0)]
    );
    let e = sys.io(a, Target::Slot(3), 8).unwrap_err().to_string();
    assert!(e.contains("no device at slot 3"), "{e}");
    let e = sys.io(a, Target::Device(d), 8).unwrap_err().to_string();
    assert!(e.contains("on VLAN 20 and refused"), "{e}");
    assert!(sys.devices[0].dev.stats().other_vlan > 0);
    sys.io(b, Target::Slot(0), 8).expect("B's I/O");
    let names = sys.namespaces().to_vec();
    sys.stop().unwrap();
    let left = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(names.iter().all(|n| !left.contains(n.as_str())), "left: {left}");
}
