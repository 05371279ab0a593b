//! Everything a testbed creates is gone after it drops: normally, after a panic, after a
//! failure half-way, and (for crashed runs) when the next testbed starts.

mod common;

use std::process::Command;

use ether_net::{run_in, FrameSocket, LinkSpec, NetError, RateLimit, SlotSpec, Testbed};

fn output(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().unwrap();
    assert!(out.status.success(), "ip {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts that no namespace and no interface of the root namespace carries `prefix`.
fn assert_gone(prefix: &str) {
    let netns = output(&["netns", "list"]);
    assert!(!netns.contains(prefix), "namespaces left with {prefix}:\n{netns}");
    let links = output(&["link"]);
    assert!(!links.contains(prefix), "links left with {prefix}:\n{links}");
}

/// A testbed with two nodes, a rate-limited link with addresses and a bridge.
fn build(tb: &mut Testbed) -> Vec<String> {
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    let spec = LinkSpec::new(2).rate(RateLimit::new(1_000_000_000)).ipv4();
    let link = tb.add_link(&a, &b, &spec).unwrap();
    assert_eq!(link.pairs[1].ipv4, Some(([10, 0, 1, 1], [10, 0, 1, 2])));
    let mut br = tb.add_bridge("x").unwrap();
    tb.attach(&a, &mut br, &LinkSpec::new(1)).unwrap();
    tb.attach(&b, &mut br, &LinkSpec::new(1)).unwrap();
    let names = tb.namespaces().to_vec();
    assert_eq!(names.len(), 3);
    let listed = output(&["netns", "list"]);
    for n in &names {
        assert!(listed.contains(n.as_str()), "{n} missing from ip netns list");
    }
    let qdisc = Command::new("tc").args(["-n", &a, "qdisc", "show", "dev", "l0p1"]).output().unwrap();
    assert!(String::from_utf8_lossy(&qdisc.stdout).contains("tbf"), "no tbf on l0p1");
    names
}

#[test]
fn drop_removes_everything() {
    let Some(mut tb) = common::testbed() else { return };
    let prefix = tb.prefix().to_string();
    build(&mut tb);
    drop(tb);
    assert_gone(&prefix);
}

#[test]
fn a_panic_inside_the_body_removes_everything() {
    let Some(mut tb) = common::testbed() else { return };
    let prefix = tb.prefix().to_string();
    let r = std::panic::catch_unwind(move || {
        build(&mut tb);
        panic!("test body fails");
    });
    assert!(r.is_err());
    assert_gone(&prefix);
}

#[test]
fn a_failure_half_way_is_one_line_and_removes_everything() {
    let Some(mut tb) = common::testbed() else { return };
    let prefix = tb.prefix().to_string();
    let a = tb.add_namespace("a").unwrap();
    let b = tb.add_namespace("b").unwrap();
    // The second namespace vanishes behind the testbed's back: creating the link fails.
    output(&["netns", "del", &b]);
    let err = tb.add_link(&a, &b, &LinkSpec::new(1)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, NetError::Command { .. }), "{msg}");
    assert!(msg.starts_with("`ip link add l0p0") && !msg.contains('\n'), "{msg}");
    assert!(tb.add_namespace("a").is_err(), "a namespace created twice");
    assert!(tb.add_link(&a, &a, &LinkSpec::new(0)).unwrap_err().to_string().contains("at least one"));
    drop(tb);
    assert_gone(&prefix);
}

#[test]
fn leftovers_of_a_dead_process_are_removed() {
    if let Some(why) = ether_net::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let name = format!("tca-{dead}-0-crashed");
    output(&["netns", "add", &name]);
    drop(Testbed::new().unwrap());
    assert_gone(&format!("tca-{dead}-"));
}

#[test]
fn a_socket_without_cap_net_raw_fails_with_one_line() {
    let Some(mut tb) = common::testbed() else { return };
    let a = tb.add_namespace("a").unwrap();
    let err = run_in(&a, || {
        drop_net_raw();
        FrameSocket::open("lo", SlotSpec::default()).unwrap_err()
    })
    .unwrap();
    let msg = err.to_string();
    assert!(matches!(err, NetError::NotPermitted { .. }), "{msg}");
    assert_eq!(msg, "AF_PACKET socket: operation not permitted (needs root or CAP_NET_RAW)");
    let err = run_in(&a, || FrameSocket::open("l9p9", SlotSpec::default()).unwrap_err()).unwrap();
    assert!(err.to_string().starts_with("no interface l9p9 in this namespace"), "{err}");
}

/// Removes CAP_NET_RAW from the calling thread's effective capabilities (capabilities belong
/// to threads; this one ends right after).
fn drop_net_raw() {
    const VERSION_3: u32 = 0x2008_0522;
    const CAP_NET_RAW: u32 = 13;
    let mut header = [VERSION_3, 0];
    let mut data = [0u32; 6]; // two of {effective, permitted, inheritable}
                              // SAFETY: header and data have the layout capget/capset expect for version 3.
    unsafe {
        assert_eq!(libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()), 0);
        data[0] &= !(1 << CAP_NET_RAW);
        assert_eq!(libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()), 0);
    }
}
