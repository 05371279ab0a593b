use hxb_sim::experiments::bandwidth::{bandwidth, Stack};
fn main() {
    let p = hxb_sim::platform::find(&std::env::args().nth(1).unwrap_or("hxb-testbed-2006".into())).unwrap();
    for k in [2u8, 4, 6, 8, 9] {
        for size in [4u64, 1 << 20] {
            let t = std::time::Instant::now();
            let (b, _) = bandwidth(&p, Stack::Hxb, k, size, false).unwrap();
            println!("k={k} size={size} bw={:.1} MB/s per_msg={:.3} us eff={:.3} stats={:?} lost={} wall={:?}", b.bytes_per_second/1e6, b.per_message_us, b.efficiency, b.totals.stats, b.totals.lost, t.elapsed());
        }
    }
    for size in [4u64, 768, 1 << 20] {
        let (b, _) = bandwidth(&p, Stack::Nt, 4, size, false).unwrap();
        println!("NT k=4 size={size} bw={:.1} per_msg={:.3}", b.bytes_per_second/1e6, b.per_message_us);
    }
}
