//! The test programs export their symbols (`-Wl,--export-dynamic`), so that this runtime finds
//! `libtca`'s CUDA entry points in them with `dlsym(RTLD_DEFAULT)`, as it finds them in
//! `libtca.so` in a C program.
//!
//! The library looks for `libtca.so` beside itself (`$ORIGIN`) when the program did not load it:
//! a program that makes no TCA call loses `-ltca` to the linker's `--as-needed`, the default of
//! Debian's and Ubuntu's compilers, and the runtime then loads it with `dlopen`.

fn main() {
    println!("cargo:rustc-link-arg-tests=-Wl,--export-dynamic");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-rpath,$ORIGIN");
}
