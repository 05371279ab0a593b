//! The reduction arithmetic: `acc = acc OP other`, element by element, on little-endian bytes.
//! `acc` holds the lower ranks' partial result, so every rank that folds the same inputs in the
//! same order gets the same bits (floating point included).
//!
//! The arithmetic runs on the host CPU and costs no simulated time (as SMPI with
//! `--cfg=smpi/cpu-threshold:-1` charges nothing for MPI's reductions).

use crate::types::{DataType, Op};

extern "C" {
    fn tca_coll_long_double(op: i32, acc: *mut u8, other: *const u8, count: usize) -> i32;
    fn tca_coll_long_double_from_f64(x: f64, out: *mut u8);
    fn tca_coll_long_double_to_f64(input: *const u8) -> f64;
}

macro_rules! int_fold {
    ($t:ty, $op:expr, $acc:expr, $other:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        for (a, b) in $acc.chunks_exact_mut(N).zip($other.chunks_exact(N)) {
            let x = <$t>::from_le_bytes(a[..N].try_into().expect("chunk"));
            let y = <$t>::from_le_bytes(b[..N].try_into().expect("chunk"));
            let r: $t = match $op {
                Op::Sum => x.wrapping_add(y),
                Op::Prod => x.wrapping_mul(y),
                Op::Max => x.max(y),
                Op::Min => x.min(y),
                Op::Band => x & y,
                Op::Bor => x | y,
                Op::Bxor => x ^ y,
                Op::Land => <$t>::from((x != 0) && (y != 0)),
                Op::Lor => <$t>::from((x != 0) || (y != 0)),
                Op::Lxor => <$t>::from((x != 0) != (y != 0)),
            };
            a.copy_from_slice(&r.to_le_bytes());
        }
    }};
}

macro_rules! float_fold {
    ($t:ty, $op:expr, $acc:expr, $other:expr) => {{
        const N: usize = std::mem::size_of::<$t>();
        let bool_of = |v: bool| if v { 1.0 as $t } else { 0.0 as $t };
        for (a, b) in $acc.chunks_exact_mut(N).zip($other.chunks_exact(N)) {
            let x = <$t>::from_le_bytes(a[..N].try_into().expect("chunk"));
            let y = <$t>::from_le_bytes(b[..N].try_into().expect("chunk"));
            let r: $t = match $op {
                Op::Sum => x + y,
                Op::Prod => x * y,
                Op::Max => {
                    if y > x {
                        y
                    } else {
                        x
                    }
                }
                Op::Min => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                Op::Land => bool_of((x != 0.0) && (y != 0.0)),
                Op::Lor => bool_of((x != 0.0) || (y != 0.0)),
                Op::Lxor => bool_of((x != 0.0) != (y != 0.0)),
                // Checked by DataType::check before any arithmetic.
                Op::Band | Op::Bor | Op::Bxor => unreachable!("bitwise operator on floating point"),
            };
            a.copy_from_slice(&r.to_le_bytes());
        }
    }};
}

/// `acc = acc OP other` for every element; `acc` and `other` hold the same whole number of
/// elements of `ty`, and `ty.check(op)` passed.
pub fn combine(ty: DataType, op: Op, acc: &mut [u8], other: &[u8]) {
    debug_assert_eq!(acc.len(), other.len());
    debug_assert_eq!(acc.len() % ty.size(), 0);
    match ty {
        DataType::Char | DataType::SignedChar => int_fold!(i8, op, acc, other),
        DataType::UnsignedChar | DataType::Byte => int_fold!(u8, op, acc, other),
        DataType::Short => int_fold!(i16, op, acc, other),
        DataType::UnsignedShort => int_fold!(u16, op, acc, other),
        DataType::Int => int_fold!(i32, op, acc, other),
        DataType::Unsigned => int_fold!(u32, op, acc, other),
        DataType::Long | DataType::LongLong => int_fold!(i64, op, acc, other),
        DataType::UnsignedLong | DataType::UnsignedLongLong => int_fold!(u64, op, acc, other),
        DataType::Float => float_fold!(f32, op, acc, other),
        DataType::Double => float_fold!(f64, op, acc, other),
        DataType::LongDouble => {
            let n = acc.len().min(other.len()) / 16;
            // SAFETY: both slices hold n 16-byte slots; the C function touches only those.
            let rc = unsafe { tca_coll_long_double(op.value(), acc.as_mut_ptr(), other.as_ptr(), n) };
            assert_eq!(rc, 0, "long double {op:?}: checked by DataType::check");
        }
    }
}

/// The left fold of `blocks` (each a whole number of elements) in order: what every rank
/// computes from the contributions in rank order, and the serial reference of the tests.
pub fn fold<'a>(ty: DataType, op: Op, mut blocks: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut acc = blocks.next().map(<[u8]>::to_vec).unwrap_or_default();
    for b in blocks {
        combine(ty, op, &mut acc, b);
    }
    if ty == DataType::LongDouble {
        // Results carry zero padding even from one rank (a copy would keep the input's).
        normalize_long_double(&mut acc);
    }
    acc
}

/// Rewrites every 16-byte slot as the C side stores a value (zero padding): MAX of a value
/// with itself is the value.
fn normalize_long_double(buf: &mut [u8]) {
    for slot in buf.chunks_exact_mut(16) {
        let same: [u8; 16] = slot.try_into().expect("a 16-byte slot");
        // SAFETY: one 16-byte slot each.
        unsafe { tca_coll_long_double(Op::Max.value(), slot.as_mut_ptr(), same.as_ptr(), 1) };
    }
}

/// A C `long double` nearest `x` in a 16-byte `TCA_LONG_DOUBLE` slot.
pub fn long_double_from_f64(x: f64) -> [u8; 16] {
    let mut out = [0u8; 16];
    // SAFETY: 16 bytes out.
    unsafe { tca_coll_long_double_from_f64(x, out.as_mut_ptr()) };
    out
}

/// The `f64` nearest the C `long double` in a 16-byte slot.
pub fn long_double_to_f64(slot: &[u8; 16]) -> f64 {
    // SAFETY: 16 bytes in.
    unsafe { tca_coll_long_double_to_f64(slot.as_ptr()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i32s(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn integer_operators() {
        let (a, b) = (i32s(&[6, -3, 0, i32::MAX]), i32s(&[3, 5, 7, 1]));
        let run = |op| {
            let mut acc = a.clone();
            combine(DataType::Int, op, &mut acc, &b);
            acc.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>()
        };
        assert_eq!(run(Op::Sum), [9, 2, 7, i32::MIN]);
        assert_eq!(run(Op::Prod), [18, -15, 0, i32::MAX]);
        assert_eq!(run(Op::Max), [6, 5, 7, i32::MAX]);
        assert_eq!(run(Op::Min), [3, -3, 0, 1]);
        assert_eq!(run(Op::Band), [2, 5, 0, 1]);
        assert_eq!(run(Op::Bor), [7, -3, 7, i32::MAX]);
        assert_eq!(run(Op::Bxor), [5, -8, 7, i32::MAX - 1]);
        assert_eq!(run(Op::Land), [1, 1, 0, 1]);
        assert_eq!(run(Op::Lor), [1, 1, 1, 1]);
        assert_eq!(run(Op::Lxor), [0, 0, 1, 0]);
    }

    /// MAX and MIN compare with `>` and `<`: a NaN folded in later is dropped, a NaN first in
    /// the fold (rank 0's) stays (docs/collectives.md), for every floating-point type.
    #[test]
    fn a_nan_stays_only_where_the_fold_starts() {
        let f64s = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let lds = |v: &[f64]| v.iter().flat_map(|&x| long_double_from_f64(x)).collect::<Vec<u8>>();
        for op in [Op::Max, Op::Min] {
            let got =
                fold(DataType::Double, op, [f64s(&[f64::NAN, 1.0]), f64s(&[1.0, f64::NAN])].iter().map(|b| &b[..]));
            let got: Vec<f64> = got.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
            assert!(got[0].is_nan() && got[1] == 1.0, "{op:?}: {got:?}");
            let got =
                fold(DataType::LongDouble, op, [lds(&[f64::NAN, 1.0]), lds(&[1.0, f64::NAN])].iter().map(|b| &b[..]));
            let got: Vec<f64> = got.chunks(16).map(|c| long_double_to_f64(c.try_into().unwrap())).collect();
            assert!(got[0].is_nan() && got[1] == 1.0, "{op:?}: {got:?}");
        }
    }

    #[test]
    fn long_double_arithmetic_is_c_long_double() {
        let a: Vec<u8> = [1.5f64, 2.0, -1.0].iter().flat_map(|&x| long_double_from_f64(x)).collect();
        let b: Vec<u8> = [2.25f64, 3.0, 0.0].iter().flat_map(|&x| long_double_from_f64(x)).collect();
        let get = |v: &[u8]| v.chunks(16).map(|c| long_double_to_f64(c.try_into().unwrap())).collect::<Vec<_>>();
        let mut s = a.clone();
        combine(DataType::LongDouble, Op::Sum, &mut s, &b);
        assert_eq!(get(&s), [3.75, 5.0, -1.0]);
        let mut m = a.clone();
        combine(DataType::LongDouble, Op::Min, &mut m, &b);
        assert_eq!(get(&m), [1.5, 2.0, -1.0]);
        let mut l = a;
        combine(DataType::LongDouble, Op::Land, &mut l, &b);
        assert_eq!(get(&l), [1.0, 1.0, 0.0]);
        // 1 + 2^-60 is exact in 64 significand bits (x86-64), not in a double.
        if cfg!(target_arch = "x86_64") {
            let mut one = long_double_from_f64(1.0).to_vec();
            let tiny = long_double_from_f64(2f64.powi(-60));
            combine(DataType::LongDouble, Op::Sum, &mut one, &tiny);
            assert_ne!(&one[..], &long_double_from_f64(1.0)[..]);
            assert!(one[10..].iter().all(|&b| b == 0), "padding is zero");
        }
    }
}
