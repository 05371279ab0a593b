//! Platform files: the three shipped files load, and every kind of mistake gets one line naming
//! the file and the key.

use expether_sim::Platform;

fn shipped(name: &str) -> String {
    std::fs::read_to_string(expether_sim::platform::platforms_dir().join(format!("{name}.toml"))).unwrap()
}

#[test]
fn the_shipped_platforms_load_with_sources_and_a_calibration_set() {
    for (name, rate) in [("expether-prototype", 10), ("expether-1gbe", 1), ("expether-40gbe", 40)] {
        let p = expether_sim::find(name).unwrap();
        assert_eq!(p.name, name);
        assert_eq!(p.link.bits_per_second, rate * 1_000_000_000);
        assert!(p.params.iter().all(|q| !q.source.is_empty()));
        assert_eq!(p.calibration.len(), p.params.iter().filter(|q| q.calibrated.is_some()).count());
        assert_eq!((p.proto.max_tlps, p.proto.failure_losses, p.raid.controller.max_payload), (10, 3, 128));
        assert!((p.bridge.user_logic_share - 0.47).abs() < 1e-12);
    }
}

fn error(text: &str) -> String {
    Platform::parse("x.toml", text).unwrap_err().to_string()
}

#[test]
fn mistakes_are_one_line_naming_file_and_key() {
    let good = shipped("expether-prototype");
    let cases = [
        (
            good.replace("latency = { value = \"1.02 us\"", "latency = { value = \"1.02 GB\""),
            "x.toml: bridge.latency: expected a time",
        ),
        (
            good.replace("max_tlps = { value = 10,", "max_tlps = { value = 300,"),
            "x.toml: bridge.max_tlps: expected a whole number from 1 to 255",
        ),
        (good.replace("[sssp]", "[sssp]\nspeed = { value = 1, source = \"x\" }"), "x.toml: sssp.speed: unknown key"),
        (
            good.replace(
                "degree = { value = 8, source = \"assumption: edges per vertex\" }",
                "degree = { value = 8, source = \"\" }",
            ),
            "x.toml: sssp.degree: every parameter needs a source",
        ),
        (
            good.replace("max_payload = { value = \"128 B\"", "max_payload = { value = \"100 B\""),
            "x.toml: raid: max_payload = 100 B must be a power of two",
        ),
        (good.replace("\"gpu.edge_time\"]", "]"), "x.toml: gpu.edge_time: calibrated but not listed"),
        (good.replace("[gpu]", "[gpx]"), "x.toml: gpu.launch: missing"),
        (
            good.replace("rate = { value = \"10 Gbit/s\"", "rate = { value = \"0 Gbit/s\""),
            "x.toml: ethernet.rate: '0 Gbit/s' must be greater than zero",
        ),
        ("[platform\n".to_owned(), "x.toml: "),
    ];
    for (text, want) in cases {
        let e = error(&text);
        assert!(e.starts_with(want), "{e:?} does not start with {want:?}");
        assert!(!e.contains('\n'), "{e:?}");
    }
    let e = expether_sim::find("no-such-platform").unwrap_err().to_string();
    assert!(e.starts_with("no-such-platform: unknown ExpEther platform (available: "), "{e}");
    assert!(e.contains("expether-1gbe, expether-40gbe, expether-prototype"), "{e}");
}
