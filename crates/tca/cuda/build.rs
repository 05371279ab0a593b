//! The test programs export their symbols (`-Wl,--export-dynamic`), so that this runtime finds
//! `libtca`'s CUDA entry points in them with `dlsym(RTLD_DEFAULT)`, as it finds them in
//! `libtca.so` in a C program.

fn main() {
    println!("cargo:rustc-link-arg-tests=-Wl,--export-dynamic");
}
