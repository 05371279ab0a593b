//! The reduction operators (`tcaOp`) and data types (`tcaDataType`) of the published API, with
//! the values `tca-api.h` gives them: an operator is its index, a type is its size in bytes
//! `<< 8 |` its index.

use crate::error::CollError;

/// A reduction operator (`tcaOp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// `TCA_OP_SUM`: `a + b` (integers wrap).
    Sum = 0,
    /// `TCA_OP_PROD`: `a * b` (integers wrap).
    Prod = 1,
    /// `TCA_OP_MAX`: the larger (for floating point `b > a ? b : a`, lower rank as `a`).
    Max = 2,
    /// `TCA_OP_MIN`: the smaller (`b < a ? b : a`).
    Min = 3,
    /// `TCA_OP_BAND`: bitwise and (integer types only).
    Band = 4,
    /// `TCA_OP_LAND`: C's `a && b`, 1 or 0 in the data type.
    Land = 5,
    /// `TCA_OP_BOR`: bitwise or (integer types only).
    Bor = 6,
    /// `TCA_OP_LOR`: C's `a || b`.
    Lor = 7,
    /// `TCA_OP_BXOR`: bitwise exclusive or (integer types only).
    Bxor = 8,
    /// `TCA_OP_LXOR`: `(a != 0) != (b != 0)`.
    Lxor = 9,
}

/// `TCA_OP_NOOP`: the last value of `tcaOp`, not an operator; reductions reject it.
pub const OP_NOOP: i32 = 10;

impl Op {
    /// Every operator, by value.
    pub const ALL: [Op; 10] =
        [Op::Sum, Op::Prod, Op::Max, Op::Min, Op::Band, Op::Land, Op::Bor, Op::Lor, Op::Bxor, Op::Lxor];

    /// The operator of C value `v`.
    ///
    /// # Errors
    /// [`CollError::InvalidOp`] for `TCA_OP_NOOP` and values outside the enum.
    pub fn from_value(v: i32) -> Result<Op, CollError> {
        usize::try_from(v)
            .ok()
            .and_then(|i| Op::ALL.get(i))
            .copied()
            .ok_or_else(|| CollError::InvalidOp(format!("tcaOp value {v} is not a reduction operator")))
    }

    /// The C value.
    pub fn value(self) -> i32 {
        self as i32
    }

    /// The C name (`TCA_OP_SUM`).
    pub fn c_name(self) -> &'static str {
        [
            "TCA_OP_SUM",
            "TCA_OP_PROD",
            "TCA_OP_MAX",
            "TCA_OP_MIN",
            "TCA_OP_BAND",
            "TCA_OP_LAND",
            "TCA_OP_BOR",
            "TCA_OP_LOR",
            "TCA_OP_BXOR",
            "TCA_OP_LXOR",
        ][self as usize]
    }

    /// Whether the operator works on the bits (`BAND`, `BOR`, `BXOR`): not for floating point.
    pub fn is_bitwise(self) -> bool {
        matches!(self, Op::Band | Op::Bor | Op::Bxor)
    }
}

/// A data type (`tcaDataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `TCA_CHAR` (`char`, signed as on x86-64 Linux).
    Char = 1 << 8,
    /// `TCA_SIGNED_CHAR`.
    SignedChar = 1 << 8 | 1,
    /// `TCA_UNSIGNED_CHAR`.
    UnsignedChar = 1 << 8 | 2,
    /// `TCA_BYTE` (unsigned 8 bits).
    Byte = 1 << 8 | 3,
    /// `TCA_SHORT`.
    Short = 2 << 8 | 4,
    /// `TCA_UNSIGNED_SHORT`.
    UnsignedShort = 2 << 8 | 5,
    /// `TCA_INT`.
    Int = 4 << 8 | 6,
    /// `TCA_UNSIGNED`.
    Unsigned = 4 << 8 | 7,
    /// `TCA_LONG` (64 bits, LP64).
    Long = 8 << 8 | 8,
    /// `TCA_UNSIGNED_LONG`.
    UnsignedLong = 8 << 8 | 9,
    /// `TCA_LONG_LONG`.
    LongLong = 8 << 8 | 10,
    /// `TCA_UNSIGNED_LONG_LONG`.
    UnsignedLongLong = 8 << 8 | 11,
    /// `TCA_FLOAT`.
    Float = 4 << 8 | 12,
    /// `TCA_DOUBLE`.
    Double = 8 << 8 | 13,
    /// `TCA_LONG_DOUBLE`: C `long double` in a 16-byte slot (x86-64: 80-bit extended precision
    /// and 6 bytes of padding, which results carry as zero).
    LongDouble = 16 << 8 | 14,
}

impl DataType {
    /// Every type, by index.
    pub const ALL: [DataType; 15] = [
        DataType::Char,
        DataType::SignedChar,
        DataType::UnsignedChar,
        DataType::Byte,
        DataType::Short,
        DataType::UnsignedShort,
        DataType::Int,
        DataType::Unsigned,
        DataType::Long,
        DataType::UnsignedLong,
        DataType::LongLong,
        DataType::UnsignedLongLong,
        DataType::Float,
        DataType::Double,
        DataType::LongDouble,
    ];

    /// The type of C value `v`.
    ///
    /// # Errors
    /// [`CollError::InvalidType`] for a value that is no `tcaDataType`.
    pub fn from_value(v: i32) -> Result<DataType, CollError> {
        DataType::ALL
            .into_iter()
            .find(|t| t.value() == v)
            .ok_or_else(|| CollError::InvalidType(format!("tcaDataType value {v:#x} is not a data type")))
    }

    /// The C value (`size << 8 | index`).
    pub fn value(self) -> i32 {
        self as i32
    }

    /// Bytes of one element.
    pub fn size(self) -> usize {
        (self as usize) >> 8
    }

    /// The C name (`TCA_DOUBLE`).
    pub fn c_name(self) -> &'static str {
        [
            "TCA_CHAR",
            "TCA_SIGNED_CHAR",
            "TCA_UNSIGNED_CHAR",
            "TCA_BYTE",
            "TCA_SHORT",
            "TCA_UNSIGNED_SHORT",
            "TCA_INT",
            "TCA_UNSIGNED",
            "TCA_LONG",
            "TCA_UNSIGNED_LONG",
            "TCA_LONG_LONG",
            "TCA_UNSIGNED_LONG_LONG",
            "TCA_FLOAT",
            "TCA_DOUBLE",
            "TCA_LONG_DOUBLE",
        ][(self as usize) & 0xff]
    }

    /// Whether the type is floating point.
    pub fn is_float(self) -> bool {
        matches!(self, DataType::Float | DataType::Double | DataType::LongDouble)
    }

    /// Checks that `op` is defined on this type.
    ///
    /// # Errors
    /// [`CollError::InvalidOp`] for a bitwise operator on a floating-point type.
    pub fn check(self, op: Op) -> Result<(), CollError> {
        if op.is_bitwise() && self.is_float() {
            return Err(CollError::InvalidOp(format!(
                "{} on {}: bitwise operators need an integer type",
                op.c_name(),
                self.c_name()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_the_headers() {
        assert_eq!(DataType::LongDouble.value(), 0x100e);
        assert_eq!(DataType::Int.size(), 4);
        assert_eq!(DataType::from_value(8 << 8 | 13).unwrap(), DataType::Double);
        assert!(DataType::from_value(8 << 8 | 12).is_err(), "size and index must agree");
        assert_eq!(Op::from_value(9).unwrap(), Op::Lxor);
        assert!(Op::from_value(OP_NOOP).is_err());
        assert!(Op::from_value(-1).is_err());
        for t in DataType::ALL {
            assert_eq!(DataType::from_value(t.value()).unwrap(), t);
            assert_eq!(t.check(Op::Band).is_err(), t.is_float());
        }
    }
}
