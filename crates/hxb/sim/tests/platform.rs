//! Platform files: both load, every parameter has a source, the calibration set is declared,
//! and bad files give one line naming the file and the key.

use hxb_sim::platform::{find, Platform};
use std::path::Path;

#[test]
fn both_platforms_load_with_sources_and_a_declared_calibration_set() {
    for name in ["hxb-testbed-2006", "pacs-cs"] {
        let p = find(name).unwrap();
        assert_eq!(p.name, name);
        assert!(p.params.iter().all(|q| !q.source.is_empty()), "{name}: a parameter without a source");
        let cal: Vec<&str> = p.calibration_set().iter().map(|q| q.key.as_str()).collect();
        assert_eq!(
            cal,
            [
                "bus.read_burst_overhead",
                "nic.interrupt_latency",
                "cpu.send_packet",
                "cpu.relay",
                "cpu.wakeup",
                "nt.recv_packet"
            ],
            "{name}"
        );
    }
    let (t, c) = (find("hxb-testbed-2006").unwrap(), find("pacs-cs").unwrap());
    assert_eq!((t.nodes, t.ports_per_node, c.nodes, c.ports_per_node), (8, 9, 2560, 6));
    // PCI-X reads: 512 B per (0.481 us + the calibrated wait).
    assert!(t.bus.read_bytes_per_second.unwrap() < t.bus.bytes_per_second / 2);
    // Host costs scale by 3.6 / 2.8 (seed 004 §5.1).
    let ratio = c.hxb.send_packet.as_ps() as f64 / t.hxb.send_packet.as_ps() as f64;
    assert!((ratio - 3.6 / 2.8).abs() < 1e-6, "{ratio}");
    assert_eq!(c.mpi_packet.as_ps(), 7_714_286);
}

fn broken(edit: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(hxb_sim::platform::platforms_dir().join("hxb-testbed-2006.toml")).unwrap();
    Platform::parse(&edit(text), Path::new("bad.toml")).unwrap_err().to_string()
}

#[test]
fn bad_files_are_one_line_errors_naming_file_and_key() {
    let e =
        broken(|t| t.replace(r#"stage_latency = { value = "5.1 us""#, r#"stage_latency = { value = "5.1 parsecs""#));
    assert!(e.starts_with("bad.toml: switch.stage_latency: "), "{e}");
    let e = broken(|t| t.replace("[mpi]", "[mpi]\nextra = { value = 1, source = \"x\" }"));
    assert_eq!(e, "bad.toml: mpi.extra: unknown key");
    let e = broken(|t| t.replace(r#"packet = { value = "6 us""#, r#"packet = { valeu = "6 us""#));
    assert!(e.starts_with("bad.toml: mpi.packet: expected { value, source, calibrated? }"), "{e}");
    let e = broken(|t| t.replace("port_bus = { value = [0, 0, 1, 1, 2, 2, 3, 3, 0]", "port_bus = { value = [0, 0]"));
    assert_eq!(e, "bad.toml: topology.port_bus: names 2 buses for 9 ports");
    let e = broken(|t| t.replace(r#"packet_payload = { value = "8192 B""#, r#"packet_payload = { value = "9000 B""#));
    assert!(e.contains("hxb.packet_payload: 9000 B + the 36 B header exceeds the MTU"), "{e}");
    let e = broken(|t| t.replace("[nic]\n", "").replace("interrupt_latency", "x_latency"));
    assert!(e.starts_with("bad.toml: "), "{e}");
    assert!(!e.contains('\n'), "one line: {e}");
    let e = find("no-such-machine").unwrap_err().to_string();
    assert!(e.contains("unknown HXB platform") && e.contains("pacs-cs"), "{e}");
    let e = Platform::load(Path::new("/nonexistent/x.toml")).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/x.toml: cannot read"), "{e}");
}
