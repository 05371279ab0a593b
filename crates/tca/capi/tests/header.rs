//! `include/tca-api.h` against the Rust tables: every result code, DMA flag, memory type, DMA
//! mode and size the header publishes is the one the library uses, and none is missing.

use std::collections::BTreeMap;
use tca::api::{DMA_MODES, MEMORY_TYPES};
use tca_proto::fabric::PIO_REGION_BYTES;
use tca_proto::{DmaFlags, CHANNELS, HANDLE_BYTES, MAX_NODES, NOTIFY_SLOTS};

fn header() -> String {
    std::fs::read_to_string(tca::HEADER).expect("read tca-api.h")
}

/// Every `#define NAME VALUE` of the header whose name starts with `prefix`.
fn defines(prefix: &str) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for line in header().lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("#define") {
            continue;
        }
        let (Some(name), Some(value)) = (words.next(), words.next()) else { continue };
        // Strings (TCA_LIB_VERSION) are not numbers of the tables.
        if !name.starts_with(prefix) || value.starts_with('"') {
            continue;
        }
        let v = match value.strip_prefix("0x") {
            Some(hex) => i64::from_str_radix(hex, 16),
            None => value.parse(),
        };
        let v = v.unwrap_or_else(|_| panic!("{name}: value {value:?} is not a number"));
        assert!(out.insert(name.to_string(), v).is_none(), "{name} defined twice");
    }
    out
}

/// The value of `NAME = V` inside an enum of the header.
fn enum_value(name: &str) -> i64 {
    let text = header();
    let at = text.find(&format!("{name} =")).unwrap_or_else(|| panic!("{name} not in an enum of the header"));
    let rest = text[at + name.len() + 2..].trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().unwrap_or_else(|_| panic!("{name}: no value in {rest:.20}"))
}

#[test]
fn result_codes_match_the_error_table() {
    let want: BTreeMap<String, i64> =
        tca::c_errors().into_iter().map(|(code, name, _)| (name, i64::from(code))).collect();
    let got = defines("TCA_ERROR_");
    assert_eq!(got, want, "tca-api.h and the error table differ");
    assert_eq!(defines("TCA_SUCCESS").get("TCA_SUCCESS"), Some(&0));
}

#[test]
fn dma_flags_match_the_flag_table() {
    let want: BTreeMap<String, i64> =
        DmaFlags::NAMES.iter().map(|(c, _, f)| (c.to_string(), i64::from(f.bits()))).collect();
    let got: BTreeMap<String, i64> = defines("tcaDMA").into_iter().collect();
    assert_eq!(got, want, "tca-api.h and DmaFlags::NAMES differ");
}

#[test]
fn enums_and_sizes_match() {
    for (i, (name, mem)) in MEMORY_TYPES.iter().enumerate() {
        assert_eq!(enum_value(name), i64::from(mem.to_byte()), "{name}");
        assert_eq!(i, mem.to_byte() as usize);
    }
    for (i, (name, _)) in DMA_MODES.iter().enumerate() {
        assert_eq!(enum_value(name), i as i64, "{name}");
    }
    let sizes = defines("TCA_");
    assert_eq!(sizes["TCA_DMA_CHANNELS"], CHANNELS as i64);
    assert_eq!(sizes["TCA_NOTIFY_SLOTS"], i64::from(NOTIFY_SLOTS));
    assert_eq!(sizes["TCA_MAX_NODES"], i64::from(MAX_NODES));
    let text = header();
    assert!(text.contains(&format!("typedef struct tcaHandle {{ uint8_t bytes[{HANDLE_BYTES}]; }} tcaHandle;")));
    assert!(text.contains(&format!("typedef struct tcaPIOHandle {{\n    uint8_t bytes[{PIO_REGION_BYTES}];")));
}

/// The header's inline PIO stores and waits use the library's limit and the layouts of
/// `tcaPIOHandle` and the views, and the header compiles as C89, C99 (pedantic) and C++11 with
/// them, or without them.
#[test]
fn inline_pio_matches_the_library() {
    assert_eq!(defines("TCA_PIO_")["TCA_PIO_INLINE_MAX"], tca::pio_direct::INLINE_MAX as i64);
    use std::mem::{offset_of, size_of};
    use tca::pio_direct::WaitView;
    let size = size_of::<tca::api::PioHandle>();
    let (view, slot) = (size_of::<WaitView>(), size_of::<tca_shm::segment::HandleSlot>());
    let (slots, mask, nodes) =
        (offset_of!(WaitView, slots), offset_of!(WaitView, slot_mask), offset_of!(WaitView, nodes));
    use tca::dma_direct::DmaWaitView as D;
    let dma = size_of::<D>();
    let (held, shares, dma_nodes) = (offset_of!(D, held), offset_of!(D, shares), offset_of!(D, nodes));
    use tca::dma_direct::DmaStartView as S;
    use tca_shm::replay::Repeat as R;
    let (start, repeat) = (size_of::<S>(), size_of::<R>());
    let (producers, waiters) = (offset_of!(S, producers), offset_of!(S, waiters));
    let (live, ring, repeat_waiters) = (offset_of!(R, live), offset_of!(R, ring), offset_of!(R, waiters));
    let producer = size_of::<tca_shm::store_lock::StoreLock<tca_shm::ring::Producer>>();
    let program = format!(
        "#include <stddef.h>\n#include \"tca-api.h\"\n\
         typedef char size_ok[sizeof(tcaPIOHandle) == {size} ? 1 : -1];\n\
         typedef char direct_ok[offsetof(tcaPIOHandle, direct) == {PIO_REGION_BYTES} ? 1 : -1];\n\
         #ifndef TCA_NO_INLINE_PIO\n\
         typedef char view_ok[sizeof(tcaPIOWaitView) == {view} && sizeof(tcaHandleSlot) == {slot} ? 1 : -1];\n\
         typedef char fields_ok[offsetof(tcaPIOWaitView, slots) == {slots} && \
           offsetof(tcaPIOWaitView, slot_mask) == {mask} && offsetof(tcaPIOWaitView, nodes) == {nodes} ? 1 : -1];\n\
         typedef char dma_ok[sizeof(tcaDMAWaitView) == {dma} && offsetof(tcaDMAWaitView, held) == {held} && \
           offsetof(tcaDMAWaitView, shares) == {shares} && offsetof(tcaDMAWaitView, nodes) == {dma_nodes} ? 1 : -1];\n\
         typedef char start_ok[sizeof(tcaDMAStartView) == {start} && offsetof(tcaDMAStartView, producers) == {producers} && \
           offsetof(tcaDMAStartView, waiters) == {waiters} && sizeof(tcaRingProducer) == {producer} ? 1 : -1];\n\
         typedef char repeat_ok[sizeof(tcaDMARepeat) == {repeat} && offsetof(tcaDMARepeat, live) == {live} && \
           offsetof(tcaDMARepeat, ring) == {ring} && offsetof(tcaDMARepeat, waiters) == {repeat_waiters} ? 1 : -1];\n\
         #endif\n\
         int store(const tcaPIOHandle *p, const void *src) {{ return tcaSendPIO(p, 0, src, 4) + tcaSendPIOCommit(); }}\n\
         int wait(const tcaHandle *h) {{ return tcaWaitPIO(h, 0, 1, 0) + tcaWaitDMARecvDesc(h, 0, 1); }}\n\
         int start(void) {{ return tcaStartDMADesc(0) + tcaWaitDMAC(0); }}\n\
         int mode(tcaDesc *d) {{ tcaDMAMode m = tcaDMAModeChaining; return tcaDescSetMode(d, m); }}\n"
    );
    let dir = std::env::temp_dir().join(format!("tca-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let include = std::path::Path::new(tca::HEADER).parent().unwrap().to_path_buf();
    let mut compiled = 0;
    for (compiler, file, flags) in [
        ("cc", "h.c", &["-std=c99", "-pedantic"][..]),
        ("cc", "h.c", &["-std=c89"][..]),
        ("cc", "h.c", &["-DTCA_NO_INLINE_PIO"][..]),
        ("c++", "h.cpp", &["-std=c++11"][..]),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, &program).unwrap();
        let out = std::process::Command::new(compiler)
            .args(flags)
            .args(["-Wall", "-Wextra", "-Werror", "-c", "-o"])
            .arg(dir.join("h.o"))
            .arg("-I")
            .arg(&include)
            .arg(&path)
            .output();
        match out {
            Ok(o) => {
                assert!(o.status.success(), "{compiler} {flags:?}: {}", String::from_utf8_lossy(&o.stderr));
                compiled += 1;
            }
            Err(e) => eprintln!("skipped {compiler} {flags:?}: {e}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compiled > 0, "no C compiler (cc) to compile the header with");
}
