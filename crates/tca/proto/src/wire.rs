//! Little-endian fields of the fixed-size wire forms (descriptor, handle, token), in the manner
//! of smoltcp's packet views: each form names its fields by byte offset and reads or writes them
//! with these functions. The offset is a constant checked against the array length when the
//! program is compiled, so a field access cannot fail or panic at run time; parsing is a
//! separate, validating step of each form (`Descriptor::decode`, `Handle::from_bytes`,
//! `Token::from_bytes`) that returns an error for any byte pattern it does not accept.

macro_rules! field {
    ($get:ident, $put:ident, $t:ty) => {
        /// Reads the field at byte `AT` of a wire form of `L` bytes.
        pub fn $get<const AT: usize, const L: usize>(b: &[u8; L]) -> $t {
            const { assert!(AT + size_of::<$t>() <= L, "field outside the wire form") };
            let mut x = [0u8; size_of::<$t>()];
            x.copy_from_slice(&b[AT..AT + size_of::<$t>()]);
            <$t>::from_le_bytes(x)
        }

        /// Writes the field at byte `AT` of a wire form of `L` bytes.
        pub fn $put<const AT: usize, const L: usize>(b: &mut [u8; L], v: $t) {
            const { assert!(AT + size_of::<$t>() <= L, "field outside the wire form") };
            b[AT..AT + size_of::<$t>()].copy_from_slice(&v.to_le_bytes());
        }
    };
}

/// Reads the `N` bytes at byte `AT` of a wire form of `L` bytes (an embedded wire form).
pub fn get_bytes<const AT: usize, const N: usize, const L: usize>(b: &[u8; L]) -> [u8; N] {
    const { assert!(AT + N <= L, "field outside the wire form") };
    let mut x = [0u8; N];
    x.copy_from_slice(&b[AT..AT + N]);
    x
}

/// Writes `v` at byte `AT` of a wire form of `L` bytes.
pub fn put_bytes<const AT: usize, const N: usize, const L: usize>(b: &mut [u8; L], v: &[u8; N]) {
    const { assert!(AT + N <= L, "field outside the wire form") };
    b[AT..AT + N].copy_from_slice(v);
}

field!(get_u8, put_u8, u8);
field!(get_u16, put_u16, u16);
field!(get_u32, put_u32, u32);
field!(get_i32, put_i32, i32);
field!(get_u64, put_u64, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_little_endian_and_in_place() {
        let mut b = [0u8; 16];
        put_u32::<4, 16>(&mut b, 0x0403_0201);
        put_u64::<8, 16>(&mut b, u64::MAX);
        assert_eq!(b[..8], [0, 0, 0, 0, 1, 2, 3, 4]);
        assert_eq!((get_u32::<4, 16>(&b), get_u16::<4, 16>(&b), get_u8::<7, 16>(&b)), (0x0403_0201, 0x0201, 4));
        assert_eq!(get_u64::<8, 16>(&b), u64::MAX);
    }
}
