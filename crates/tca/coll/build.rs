//! Compiles `src/long_double.c` (C `long double` arithmetic for `TCA_LONG_DOUBLE`, which Rust
//! has no type for) with the system C compiler (`$CC`, else `cc`) into a static library.

use std::path::PathBuf;
use std::process::Command;

fn run(cmd: &mut Command) {
    let status = cmd.status().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(status.success(), "{cmd:?} failed: {status}");
}

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ar = std::env::var("AR").unwrap_or_else(|_| "ar".into());
    let obj = out.join("long_double.o");
    run(Command::new(&cc)
        .args(["-O2", "-fPIC", "-std=c99", "-Wall", "-Werror", "-c", "src/long_double.c", "-o"])
        .arg(&obj));
    let lib = out.join("libtca_coll_ld.a");
    let _ = std::fs::remove_file(&lib);
    run(Command::new(&ar).arg("crs").arg(&lib).arg(&obj));
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static=tca_coll_ld");
    println!("cargo:rerun-if-changed=src/long_double.c");
    println!("cargo:rerun-if-env-changed=CC");
}
