//! Shared by the real-link tests: the skip check and a frame pattern.

// Each test binary uses only part of this module.
#![allow(dead_code)]

use ether_net::{write_header, MacAddr, HEADER_LEN};

/// A fresh testbed, or `None` after printing why real links are unavailable here.
pub fn testbed() -> Option<ether_net::Testbed> {
    if let Some(why) = ether_net::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    Some(ether_net::Testbed::new().expect("testbed"))
}

/// Frame `seq` of stream `stream`: header, then seq and stream, then bytes derived from both.
pub fn fill(frame: &mut [u8], dst: MacAddr, src: MacAddr, stream: u8, seq: u64) {
    write_header(frame, dst, src);
    frame[HEADER_LEN..HEADER_LEN + 8].copy_from_slice(&seq.to_le_bytes());
    frame[HEADER_LEN + 8] = stream;
    for (i, b) in frame[HEADER_LEN + 9..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(31).wrapping_add(i) as u8 ^ stream;
    }
}

/// The seq of a frame built by [`fill`], if every byte is what `fill` writes.
pub fn check(frame: &[u8], dst: MacAddr, src: MacAddr, stream: u8, len: usize) -> Result<u64, String> {
    if frame.len() != len {
        return Err(format!("frame of {} B, expected {len}", frame.len()));
    }
    let seq = u64::from_le_bytes(frame[HEADER_LEN..HEADER_LEN + 8].try_into().unwrap());
    let mut want = vec![0u8; len];
    fill(&mut want, dst, src, stream, seq);
    if frame != want.as_slice() {
        return Err(format!("frame {seq} of stream {stream} has wrong contents"));
    }
    Ok(seq)
}
