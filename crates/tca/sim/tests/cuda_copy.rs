//! The simulated `cudaMemcpy` against the hand-written CUDA copy model of the baselines
//! (`python/tca/peach/baselines/cuda.py`, docs/baselines.md): host <-> GPU from 8 B to 4 MiB on
//! each platform, within 5 %. The Python model runs unchanged in a `python3` child, reading the
//! platform file itself; its unit parser (`tca._native.parse_quantity`, the Rust parser) is
//! answered from a table this test fills with the Rust parser, so no built extension is needed.

use base::units::{parse_quantity, Dimension, Spelling};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use tca_model::platform::baselines::BaselineValue;
use tca_model::platform::Platform;
use tca_proto::fabric::CopyKind;
use tca_proto::{Fabric, MemoryType};

const SIZES: [u64; 8] = [8, 64, 512, 4096, 32768, 262_144, 2 << 20, 4 << 20];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Simulated microseconds of `cudaMemcpy` host -> GPU and GPU -> host for each size.
fn simulated(platform: &Platform) -> Vec<(f64, f64)> {
    tca_sim::run(platform, 1, |r| {
        let top = *SIZES.last().unwrap();
        let host = r.malloc(top, MemoryType::Cpu).unwrap();
        let dev = r.malloc(top, MemoryType::Gpu).unwrap();
        let time = |dst, src, n| {
            let t0 = r.now().unwrap();
            // SAFETY: both pointers are buffers of this rank of `top` bytes.
            unsafe { r.memcpy(dst, src, n, CopyKind::Default) }.unwrap();
            (r.now().unwrap() - t0).as_us_f64()
        };
        SIZES.iter().map(|&n| (time(dev, host, n), time(host, dev, n))).collect()
    })
    .unwrap()
    .remove(0)
}

/// A JSON object mapping "text|dimension" to the value the Rust parser gives, for every
/// quantity of the platform's `[baselines]` tables.
fn unit_table(platform: &Platform) -> String {
    let mut out = String::from("{");
    for b in &platform.baselines {
        let BaselineValue::Text(text) = &b.value else { continue };
        for dim in ["time", "bandwidth", "bytes"] {
            let d = Dimension::from_name(dim).unwrap();
            if let Ok(v) = parse_quantity(text, d, Spelling::Platform) {
                let _ = write!(out, "{:?}: {v:e}, ", format!("{text}|{dim}"));
            }
        }
    }
    out.trim_end_matches([',', ' ']).to_string() + "}"
}

const SCRIPT: &str = r#"
import json, sys, tomllib, types
table = json.loads(sys.argv[2])
native = types.ModuleType("tca._native")
def parse_quantity(text, dimension, spelling):
    key = f"{text}|{dimension}"
    if key not in table:
        raise ValueError(f"not a {dimension}: {text}")
    return table[key]
native.parse_quantity = parse_quantity
sys.modules["tca._native"] = native
from tca.peach.baselines.cuda import CudaCopies
with open(sys.argv[1], "rb") as f:
    copies = CudaCopies.from_params(tomllib.load(f)["baselines"])
sizes = json.loads(sys.argv[3])
print(json.dumps([[copies.memcpy("cpu-gpu", n) * 1e6, copies.memcpy("gpu-cpu", n) * 1e6] for n in sizes]))
"#;

/// The Python model's microseconds for each size, host -> GPU and GPU -> host.
fn python_model(path: &Path, platform: &Platform) -> Vec<(f64, f64)> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let sizes = format!("{SIZES:?}");
    let out = Command::new(&python)
        .args(["-c", SCRIPT, path.to_str().unwrap(), &unit_table(platform), &sizes])
        .env("PYTHONPATH", root().join("python"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python} (Python 3.11 or later is needed): {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{python}: {}{text}", String::from_utf8_lossy(&out.stderr));
    let numbers: Vec<f64> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == '-'))
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or_else(|_| panic!("{s} in {text}")))
        .collect();
    numbers.chunks(2).map(|c| (c[0], c[1])).collect()
}

#[test]
fn simulated_cuda_memcpy_agrees_with_the_baseline_model() {
    for name in ["ha-pacs-tca", "peach2-testbed-2013", "peach3-testbed"] {
        let path = root().join(format!("platforms/{name}.toml"));
        let platform = Platform::load(&path).unwrap();
        let sim = simulated(&platform);
        let model = python_model(&path, &platform);
        assert_eq!(model.len(), SIZES.len(), "{name}");
        let mut worst: f64 = 0.0;
        for ((n, s), m) in SIZES.iter().zip(&sim).zip(&model) {
            for (dir, a, b) in [("H2D", s.0, m.0), ("D2H", s.1, m.1)] {
                let dev = (a - b).abs() / b;
                worst = worst.max(dev);
                assert!(dev < 0.05, "{name} {dir} {n} B: simulated {a:.3} us, model {b:.3} us");
            }
        }
        eprintln!("{name}: simulated cudaMemcpy within {:.2} % of the baseline model", worst * 100.0);
    }
}
