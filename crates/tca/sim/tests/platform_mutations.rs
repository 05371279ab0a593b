//! Random mutations of every bundled platform file: values replaced by random numbers, strings,
//! units, huge, negative or NaN values, lines deleted or duplicated. Each mutated file either
//! loads and gives finite positive derived values (clock cycles, TLP serialisation, ideal
//! bandwidth, a short DMA run and PIO stores across the cables on the model), or fails with the one-line error naming the file;
//! it never panics and never runs longer than a few seconds.

#[path = "../../model/tests/common/mod.rs"]
mod common;

use proptest::prelude::*;
use proptest::test_runner::{TestCaseError, TestRunner};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use tca_model::platform::limits::{Kind, Limit, Rule};
use tca_model::platform::Platform;
use tca_model::router::Target;
use tca_model::{Cluster, Output};
use tca_proto::DmaMode;
use tca_sim::experiment::{run_dma, DmaRun, Endpoint};

use base::SimTime;
use pcie::TlpKind;

/// Longest one case may take (parse, checks and a short DMA run take milliseconds).
const CASE_LIMIT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
enum Mutation {
    /// The value of a `key = value` line (the `value` of an inline parameter table); the number
    /// picks the line among those that have a value, modulo their count.
    Replace(usize, String),
    /// The line at this number, modulo the number of lines.
    Delete(usize),
    Duplicate(usize),
}

/// TOML text of a replacement value.
fn value_text() -> impl Strategy<Value = String> {
    let numbers = prop_oneof![
        Just("0".to_owned()),
        Just("1".to_owned()),
        Just("-1".to_owned()),
        Just("0.5".to_owned()),
        Just("1e-9".to_owned()),
        Just("20000000".to_owned()),
        Just("4294967296".to_owned()),
        Just("4294967298".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("1e30".to_owned()),
        Just("1e400".to_owned()),
        Just("nan".to_owned()),
        Just("inf".to_owned()),
        (1u64..5000).prop_map(|v| v.to_string()),
        any::<u32>().prop_map(|v| v.to_string()),
        (0.0f64..1e6).prop_map(|v| format!("{v}")),
    ];
    let units = prop_oneof![
        Just(""),
        Just("B"),
        Just("KiB"),
        Just("MiB"),
        Just("GiB"),
        Just("TiB"),
        Just("ps"),
        Just("ns"),
        Just("us"),
        Just("ms"),
        Just("s"),
        Just("B/s"),
        Just("MB/s"),
        Just("GB/s"),
        Just("Gbit/s"),
        Just("MHz"),
        Just("GHz"),
        Just("GT/s"),
        Just("MT/s"),
        Just("KB"),
        Just("parsecs"),
    ];
    prop_oneof![
        // A quantity with a unit, with or without a space.
        3 => (numbers.clone(), units, any::<bool>())
            .prop_map(|(n, u, space)| format!("\"{n}{}{u}\"", if space { " " } else { "" })),
        // A bare TOML integer or float.
        2 => prop_oneof![
            any::<i64>().prop_map(|v| v.to_string()),
            (0i64..300).prop_map(|v| v.to_string()),
            Just("4294967296".to_owned()),
            Just("9223372036854775807".to_owned()),
            Just("-9223372036854775808".to_owned()),
            Just("nan".to_owned()),
            Just("inf".to_owned()),
            Just("-inf".to_owned()),
            Just("-0.0".to_owned()),
            Just("1e300".to_owned()),
            any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| format!("{v:e}")),
        ],
        // Strings, lists and other TOML types.
        1 => prop_oneof![
            Just("\"\"".to_owned()),
            Just("\"gen2\"".to_owned()),
            Just("\"gen3\"".to_owned()),
            Just("\"gen9\"".to_owned()),
            Just("\"0E-1W\"".to_owned()),
            Just("[]".to_owned()),
            Just("[0]".to_owned()),
            Just("[1, 0]".to_owned()),
            Just("[-1]".to_owned()),
            Just("[4294967296]".to_owned()),
            Just("[0, 0, 1, 1, 0, 0, 1, 1, 1]".to_owned()),
            Just("[\"0E-1W\"]".to_owned()),
            Just("[\"0E-0W\"]".to_owned()),
            Just("[\"0E-1W\", \"1E-0W\"]".to_owned()),
            Just("[\"0S-1S\"]".to_owned()),
            Just("[\"0E-1W\", \"0E-1W\"]".to_owned()),
            Just("[\"0E-15W\"]".to_owned()),
            Just("true".to_owned()),
            Just("{}".to_owned()),
            numbers.prop_map(|n| format!("\"{n}\"")),
        ],
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (any::<usize>(), value_text()).prop_map(|(i, v)| Mutation::Replace(i, v)),
        1 => any::<usize>().prop_map(Mutation::Delete),
        1 => any::<usize>().prop_map(Mutation::Duplicate),
    ]
}

/// Where the value of a `key = value` line starts, if the line has one.
fn value_start(line: &str) -> Option<usize> {
    let t = line.trim_start();
    if t.starts_with('#') || t.starts_with('[') {
        return None;
    }
    let at = match line.find("{ value = ") {
        Some(i) => i + "{ value = ".len(),
        None => line.find(" = ")? + " = ".len(),
    };
    Some(at)
}

fn apply(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for m in mutations {
        match m {
            Mutation::Replace(i, value) => {
                let candidates: Vec<usize> = (0..lines.len()).filter(|&n| value_start(&lines[n]).is_some()).collect();
                let n = candidates[i % candidates.len()];
                let line = &lines[n];
                let span = common::value_span(line, value_start(line).unwrap());
                lines[n] = format!("{}{}{}", &line[..span.start], value, &line[span.end..]);
            }
            Mutation::Delete(i) => {
                let n = i % lines.len();
                lines.remove(n);
            }
            Mutation::Duplicate(i) => {
                let n = i % lines.len();
                let line = lines[n].clone();
                lines.insert(n, line);
            }
        }
    }
    lines.join("\n") + "\n"
}

/// What must hold for a platform that loaded.
fn check_loaded(p: &Platform) -> Result<(), String> {
    let positive = |what: &str, t: SimTime| if t > SimTime::ZERO { Ok(()) } else { Err(format!("{what} is zero")) };
    let c = &p.peach2;
    for (what, cycles) in [
        ("one cycle", 1),
        ("descriptor_cycles", c.descriptor_cycles),
        ("forward_cycles", c.forward_cycles),
        ("register_read_cycles", c.register_read_cycles),
        ("dma_start_cycles", c.dma_start_cycles),
        ("internal + descriptor cycles", c.internal_fetch_cycles + c.descriptor_cycles),
    ] {
        let t = c.cycles(cycles);
        positive(what, t)?;
        // The slowest clock is 1 MHz: a cycle is at most a microsecond.
        if t > SimTime::from_us(cycles) {
            return Err(format!("{what} = {cycles} cycles take {t}"));
        }
    }
    for (what, link) in [("host link", &p.host_link), ("cable link", &p.cable_link), ("GPU link", &p.gpu_link)] {
        positive(what, link.serialization(link.wire_bytes(TlpKind::MemWrite, 1 << 32, 256)))?;
        positive(what, link.serialization(link.wire_bytes(TlpKind::Completion, 0, link.max_payload)))?;
        let (raw, ideal) = (link.raw_bytes_per_second(), link.ideal_write_bandwidth());
        if !(raw.is_finite() && ideal.is_finite() && ideal > 0.0 && ideal < raw) {
            return Err(format!("{what}: raw {raw} B/s, ideal {ideal} B/s"));
        }
    }
    // The largest region moved at the slowest rate fits simulated time ten times over.
    let h = &p.host;
    let slowest =
        [h.inbound_bandwidth, h.p2p_read_bandwidth, h.qpi_bandwidth, p.gpu.read_bandwidth].into_iter().min().unwrap();
    if slowest == 0 {
        return Err("a zero bandwidth".into());
    }
    let region = p.address_map.host_bytes.max(p.address_map.gpu_bytes) as u128;
    if region * 1_000_000_000_000 / slowest as u128 * 10 > u64::MAX as u128 {
        return Err(format!("{region} B at {slowest} B/s overflows simulated time"));
    }
    let map = &p.address_map;
    let node_part = map.window_bytes as u128 / map.max_nodes.max(1) as u128;
    let used = map.host_bytes as u128 + map.gpu_bytes as u128 * p.gpu.sockets.len() as u128;
    if map.max_nodes == 0 || used > node_part || p.nodes == 0 || p.nodes > map.max_nodes {
        return Err(format!("address map: {map:?}, {} nodes", p.nodes));
    }
    for r in &p.references {
        if !(r.x.is_finite() && r.x > 0.0 && r.value.is_finite() && r.value > 0.0) {
            return Err(format!("reference {r:?}"));
        }
    }
    // A short run of each DMA mode on the model.
    for (mode, count) in [(DmaMode::Chaining, 2), (DmaMode::Register, p.peach2.register_slots.min(2))] {
        let run = DmaRun { src: Endpoint::Gpu(0), dst: Endpoint::Host, mode, size: 4096, count };
        let r = run_dma(p, &run, None).map_err(|e| format!("{mode:?} DMA: {e}"))?;
        if r.bytes != 4096 * u64::from(count)
            || r.elapsed == SimTime::ZERO
            || !(r.bandwidth().is_finite() && r.bandwidth() > 0.0)
        {
            return Err(format!("{mode:?} DMA: {} B in {}", r.bytes, r.elapsed));
        }
    }
    // PIO stores from node 0 to the farthest-numbered node, through the cables.
    let mut cluster = Cluster::new(p);
    let last = p.nodes - 1;
    let dst = cluster.address_map().global(last, Target::Host(4096));
    cluster.pio(SimTime::ZERO, 0, dst, 264, 7).map_err(|e| format!("PIO: {e}"))?;
    let mut outputs = Vec::new();
    while cluster.step(None).is_some() {
        cluster.drain_outputs(&mut outputs);
    }
    let landed: u64 = outputs
        .iter()
        .map(|(_, out)| match out {
            Output::PioLanded { id: 7, len, .. } => *len,
            _ => 0,
        })
        .sum();
    if landed != 264 || cluster.now() == SimTime::ZERO {
        return Err(format!("PIO to node {last}: {landed} of 264 B landed at {}", cluster.now()));
    }
    Ok(())
}

/// Loads `text` and checks the outcome: whether it loaded, or what property broke.
fn check(text: &str, path: &Path) -> Result<bool, String> {
    match Platform::parse(text, path) {
        Ok(p) => check_loaded(&p).map(|()| true),
        Err(e) => {
            let e = e.to_string();
            let prefix = format!("{}: ", path.display());
            if e.starts_with(&prefix) && e.len() > prefix.len() && !e.contains('\n') {
                Ok(false)
            } else {
                Err(format!("not a one-line error naming the file: {e:?}"))
            }
        }
    }
}

/// Runs `check` on its own thread: a panic is a failure, and a run past [`CASE_LIMIT`] ends the
/// test process with the text that hung.
fn check_bounded(text: String, path: PathBuf) -> Result<bool, String> {
    let (text_copy, path_copy) = (text.clone(), path.clone());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(|| check(&text, &path)));
        let _ = tx.send(outcome.map_err(|panic| {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            format!("panicked: {text}")
        }));
    });
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(outcome) => outcome.and_then(|r| r),
        Err(_) => {
            // The case still runs on its thread and may be eating memory: stop here rather than
            // let the shrinker start more of them.
            eprintln!("{}: no answer within {CASE_LIMIT:?} for this text:\n{text_copy}", path_copy.display());
            std::process::exit(101);
        }
    }
}

#[test]
fn every_bundled_file_passes_the_checks_unmutated() {
    for path in common::platform_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let p = Platform::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
        check_loaded(&p).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn mutations_replace_delete_and_duplicate_lines() {
    let text = "[a]\nk = { value = \"1 B\", source = \"s\" }\nx = 3\n";
    let one = |m: Mutation| apply(text, &[m]);
    assert!(one(Mutation::Replace(0, "nan".into())).contains("k = { value = nan, source"));
    assert!(one(Mutation::Replace(3, "[]".into())).ends_with("x = []\n"));
    assert_eq!(one(Mutation::Delete(3)), "k = { value = \"1 B\", source = \"s\" }\nx = 3\n");
    assert!(one(Mutation::Duplicate(1)).contains("source = \"s\" }\nk = { value"));
}

/// A mutated platform file loads and behaves, or is rejected in one line; no panic, no hang.
/// Some of the mutated files must load, so that the checks of loaded platforms run too.
#[test]
fn mutated_platform_files_load_or_fail_in_one_line() {
    // PROPTEST_CASES=N runs more cases (a longer search); the default keeps the test near 1 s.
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1500);
    let mut runner = TestRunner::new(ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() });
    let files = common::platform_files();
    let texts: Vec<String> = files.iter().map(|f| std::fs::read_to_string(f).unwrap()).collect();
    let loaded = AtomicUsize::new(0);
    let strategy = (any::<usize>(), prop::collection::vec(mutation(), 1..4));
    let result = runner.run(&strategy, |(file, mutations)| {
        let (path, text) = (&files[file % files.len()], &texts[file % files.len()]);
        let outcome = check_bounded(apply(text, &mutations), path.clone());
        match outcome {
            Ok(true) => _ = loaded.fetch_add(1, Ordering::Relaxed),
            Ok(false) => {}
            Err(e) => return Err(TestCaseError::fail(format!("{}: {e}\nmutations: {mutations:?}", path.display()))),
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let loaded = loaded.into_inner();
    println!("{loaded} of {cases} mutated files loaded");
    // About 9% load (baseline tables are checked too), 16 to 40 of 300 in runs with random
    // seeds: enough for the loaded-file checks to run. The bound leaves room for the spread.
    assert!(loaded * 40 > cases as usize, "only {loaded} of {cases} mutated files loaded");
}

/// A value for `limit`: the value as written, a bound, or log-uniformly anywhere between,
/// obeying its rule (PCIe lane counts: one of the widths the specification allows; a link's
/// rate: one of those of its encoding, which the file's generation fixes).
fn value_in_range(key: &str, limit: &'static Limit, original: String) -> BoxedStrategy<String> {
    if key.starts_with("pcie.") && key.ends_with(".rate") {
        let rates = if original.contains("2.5 GT/s") || original.contains("5 GT/s") {
            vec!["2.5 GT/s", "5 GT/s"]
        } else {
            vec!["8 GT/s", "16 GT/s", "32 GT/s"]
        };
        return prop::sample::select(rates).prop_map(|r| format!("\"{r}\"")).boxed();
    }
    let parse = move |t: &str| limit.kind.parse(t).expect("the table's bounds parse");
    let (min, max) = (parse(limit.min), parse(limit.max));
    let step = match limit.rule {
        Rule::MultipleOf(m) => parse(m),
        _ => 1,
    };
    let inside = (0.0f64..=1.0).prop_map(move |f| {
        let lo = (min.max(1) as f64).ln();
        let v = (lo + f * ((max as f64).ln() - lo)).exp() as u64;
        match limit.rule {
            Rule::PowerOfTwo => {
                1u64 << (63 - v.max(1).leading_zeros()).clamp(min.trailing_zeros(), max.trailing_zeros())
            }
            _ => (v / step * step).clamp(min, max),
        }
    });
    let bounds = if key.ends_with(".lanes") {
        prop::sample::select(vec![1u64, 2, 4, 8, 12, 16, 32]).boxed()
    } else {
        prop_oneof![1 => Just(min), 1 => Just(max), 2 => inside].boxed()
    };
    let written = bounds.prop_map(move |v| match limit.kind {
        Kind::Count => v.to_string(),
        Kind::Bytes => format!("\"{v} B\""),
        Kind::Time => format!("\"{v} ps\""),
        Kind::Bandwidth => format!("\"{v} B/s\""),
        Kind::Frequency => format!("\"{v} Hz\""),
        Kind::TransferRate => format!("\"{} MT/s\"", v as f64 / 1e6),
    });
    prop_oneof![1 => written, 2 => Just(original)].boxed()
}

/// Values anywhere inside their allowed ranges, together, never break the model: a file either
/// loads and behaves or is rejected in one line (for parameters that contradict each other).
#[test]
fn values_anywhere_in_their_ranges_load_and_run_or_fail_in_one_line() {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300);
    let files = common::platform_files();
    let loaded = AtomicUsize::new(0);
    for path in &files {
        let mut runner =
            TestRunner::new(ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() });
        let text = std::fs::read_to_string(path).unwrap();
        let p = Platform::parse(&text, path).unwrap();
        // Every numeric parameter but the topology, which the cables fix.
        let keys: Vec<(String, &'static Limit)> = p
            .params
            .iter()
            .filter(|q| !q.key.starts_with("topology.") && q.key != "gpu.sockets")
            .filter_map(|q| Limit::of(&q.key).map(|l| (q.key.clone(), l)))
            .collect();
        let values: Vec<_> = keys
            .iter()
            .map(|(key, l)| {
                let original = p.params.iter().find(|q| &q.key == key).unwrap().value.clone();
                let original = if l.kind == Kind::Count { original } else { format!("\"{original}\"") };
                value_in_range(key, l, original)
            })
            .collect();
        let result = runner.run(&values, |values| {
            let mut edited = text.clone();
            for ((key, _), value) in keys.iter().zip(&values) {
                edited = common::set_value(&edited, key, value);
            }
            match check_bounded(edited, path.clone()) {
                Ok(true) => _ = loaded.fetch_add(1, Ordering::Relaxed),
                Ok(false) => {}
                Err(e) => return Err(TestCaseError::fail(format!("{}: {e}\nvalues: {values:?}", path.display()))),
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }
    let (loaded, total) = (loaded.into_inner(), files.len() * cases as usize);
    println!("{loaded} of {total} files with values inside their ranges loaded");
    assert!(loaded * 20 > total, "only {loaded} of {total} loaded");
}
