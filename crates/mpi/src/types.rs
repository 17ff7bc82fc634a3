//! Predefined datatypes and reduction operations, by their standard-ABI
//! handle values (see `include/mpi.h`), and the reductions themselves on
//! byte buffers in native byte order.

use crate::consts::err;

/// How a reduction sees one element of a datatype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Num {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// Complex of two `f32` / two `f64`.
    C32,
    C64,
    /// A (value, index) pair for MINLOC/MAXLOC: value kind, offset of
    /// the index, index kind.
    Pair(&'static Num, usize, &'static Num),
    /// Transferable, not reducible (long double, packed, …).
    Opaque,
}

/// A predefined datatype: its size in bytes and element kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Datatype {
    pub size: usize,
    pub num: Num,
    pub name: &'static str,
}

const fn dt(size: usize, num: Num, name: &'static str) -> Option<Datatype> {
    Some(Datatype { size, num, name })
}

/// The predefined datatype with handle value `h`, if any.
pub(crate) fn datatype(h: usize) -> Option<Datatype> {
    use Num::*;
    match h {
        0x201 => dt(8, I64, "MPI_AINT"),
        0x202 => dt(8, I64, "MPI_COUNT"),
        0x203 => dt(8, I64, "MPI_OFFSET"),
        0x207 => dt(1, Opaque, "MPI_PACKED"),
        0x208 => dt(2, I16, "MPI_SHORT"),
        0x209 => dt(4, I32, "MPI_INT"),
        0x20a => dt(8, I64, "MPI_LONG"),
        0x20b => dt(8, I64, "MPI_LONG_LONG"),
        0x20c => dt(2, U16, "MPI_UNSIGNED_SHORT"),
        0x20d => dt(4, U32, "MPI_UNSIGNED"),
        0x20e => dt(8, U64, "MPI_UNSIGNED_LONG"),
        0x20f => dt(8, U64, "MPI_UNSIGNED_LONG_LONG"),
        0x210 => dt(4, F32, "MPI_FLOAT"),
        0x212 => dt(8, C32, "MPI_C_FLOAT_COMPLEX"),
        0x213 => dt(8, C32, "MPI_CXX_FLOAT_COMPLEX"),
        0x214 => dt(8, F64, "MPI_DOUBLE"),
        0x216 => dt(16, C64, "MPI_C_DOUBLE_COMPLEX"),
        0x217 => dt(16, C64, "MPI_CXX_DOUBLE_COMPLEX"),
        0x218 => dt(4, I32, "MPI_LOGICAL"),
        0x219 => dt(4, I32, "MPI_INTEGER"),
        0x21a => dt(4, F32, "MPI_REAL"),
        0x21b => dt(8, C32, "MPI_COMPLEX"),
        0x21c => dt(8, F64, "MPI_DOUBLE_PRECISION"),
        0x21d => dt(16, C64, "MPI_DOUBLE_COMPLEX"),
        0x21e => dt(1, Opaque, "MPI_CHARACTER"),
        0x220 => dt(16, Opaque, "MPI_LONG_DOUBLE"),
        0x224 => dt(32, Opaque, "MPI_C_LONG_DOUBLE_COMPLEX"),
        0x225 => dt(32, Opaque, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
        0x228 => dt(8, Pair(&F32, 4, &I32), "MPI_FLOAT_INT"),
        0x229 => dt(16, Pair(&F64, 8, &I32), "MPI_DOUBLE_INT"),
        0x22a => dt(16, Pair(&I64, 8, &I32), "MPI_LONG_INT"),
        0x22b => dt(8, Pair(&I32, 4, &I32), "MPI_2INT"),
        0x22c => dt(8, Pair(&I16, 4, &I32), "MPI_SHORT_INT"),
        0x22d => dt(32, Opaque, "MPI_LONG_DOUBLE_INT"),
        0x230 => dt(8, Pair(&F32, 4, &F32), "MPI_2REAL"),
        0x231 => dt(16, Pair(&F64, 8, &F64), "MPI_2DOUBLE_PRECISION"),
        0x232 => dt(8, Pair(&I32, 4, &I32), "MPI_2INTEGER"),
        0x238 => dt(1, U8, "MPI_C_BOOL"),
        0x239 => dt(1, U8, "MPI_CXX_BOOL"),
        0x23c => dt(4, I32, "MPI_WCHAR"),
        0x240 => dt(1, I8, "MPI_INT8_T"),
        0x241 => dt(1, U8, "MPI_UINT8_T"),
        0x243 => dt(1, I8, "MPI_CHAR"),
        0x244 => dt(1, I8, "MPI_SIGNED_CHAR"),
        0x245 => dt(1, U8, "MPI_UNSIGNED_CHAR"),
        0x247 => dt(1, U8, "MPI_BYTE"),
        0x248 => dt(2, I16, "MPI_INT16_T"),
        0x249 => dt(2, U16, "MPI_UINT16_T"),
        0x250 => dt(4, I32, "MPI_INT32_T"),
        0x251 => dt(4, U32, "MPI_UINT32_T"),
        0x258 => dt(8, I64, "MPI_INT64_T"),
        0x259 => dt(8, U64, "MPI_UINT64_T"),
        0x2c0 => dt(1, I8, "MPI_LOGICAL1"),
        0x2c1 => dt(1, I8, "MPI_INTEGER1"),
        0x2c8 => dt(2, I16, "MPI_LOGICAL2"),
        0x2c9 => dt(2, I16, "MPI_INTEGER2"),
        0x2ca => dt(2, Opaque, "MPI_REAL2"),
        0x2d0 => dt(4, I32, "MPI_LOGICAL4"),
        0x2d1 => dt(4, I32, "MPI_INTEGER4"),
        0x2d2 => dt(4, F32, "MPI_REAL4"),
        0x2d3 => dt(4, Opaque, "MPI_COMPLEX4"),
        0x2d8 => dt(8, I64, "MPI_LOGICAL8"),
        0x2d9 => dt(8, I64, "MPI_INTEGER8"),
        0x2da => dt(8, F64, "MPI_REAL8"),
        0x2db => dt(8, C32, "MPI_COMPLEX8"),
        0x2e0 => dt(16, Opaque, "MPI_LOGICAL16"),
        0x2e1 => dt(16, Opaque, "MPI_INTEGER16"),
        0x2e2 => dt(16, Opaque, "MPI_REAL16"),
        0x2e3 => dt(16, C64, "MPI_COMPLEX16"),
        0x2eb => dt(32, Opaque, "MPI_COMPLEX32"),
        _ => None,
    }
}

/// A predefined reduction operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Sum,
    Min,
    Max,
    Prod,
    Band,
    Bor,
    Bxor,
    Land,
    Lor,
    Lxor,
    Minloc,
    Maxloc,
    Replace,
    Nothing,
}

/// The predefined operation with handle value `h`, if any.
pub(crate) fn op(h: usize) -> Option<Op> {
    Some(match h {
        0x21 => Op::Sum,
        0x22 => Op::Min,
        0x23 => Op::Max,
        0x24 => Op::Prod,
        0x28 => Op::Band,
        0x29 => Op::Bor,
        0x2a => Op::Bxor,
        0x30 => Op::Land,
        0x31 => Op::Lor,
        0x32 => Op::Lxor,
        0x38 => Op::Minloc,
        0x39 => Op::Maxloc,
        0x3c => Op::Replace,
        0x3d => Op::Nothing,
        _ => return None,
    })
}

/// A number read from and written to native-order bytes.
trait Elem: Copy + PartialOrd {
    const N: usize;
    fn get(b: &[u8]) -> Self;
    fn put(self, b: &mut [u8]);
}

macro_rules! elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const N: usize = std::mem::size_of::<$t>();
            fn get(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::N]);
                <$t>::from_ne_bytes(a)
            }
            fn put(self, b: &mut [u8]) {
                b[..Self::N].copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
elem!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Element-wise `inout = inv (op) inout`, as many whole elements as
/// both hold.
fn zip<T: Elem>(inv: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    for (a, b) in inv.chunks_exact(T::N).zip(inout.chunks_exact_mut(T::N)) {
        f(T::get(a), T::get(b)).put(b);
    }
}

macro_rules! int_ops {
    ($t:ty, $op:expr, $inv:expr, $io:expr) => {{
        let z = <$t>::default();
        match $op {
            Op::Sum => zip::<$t>($inv, $io, |a, b| a.wrapping_add(b)),
            Op::Prod => zip::<$t>($inv, $io, |a, b| a.wrapping_mul(b)),
            Op::Min => zip::<$t>($inv, $io, |a, b| a.min(b)),
            Op::Max => zip::<$t>($inv, $io, |a, b| a.max(b)),
            Op::Band => zip::<$t>($inv, $io, |a, b| a & b),
            Op::Bor => zip::<$t>($inv, $io, |a, b| a | b),
            Op::Bxor => zip::<$t>($inv, $io, |a, b| a ^ b),
            Op::Land => zip::<$t>($inv, $io, |a, b| ((a != z) && (b != z)) as $t),
            Op::Lor => zip::<$t>($inv, $io, |a, b| ((a != z) || (b != z)) as $t),
            Op::Lxor => zip::<$t>($inv, $io, |a, b| ((a != z) != (b != z)) as $t),
            _ => return Err(err::OP),
        }
        Ok(())
    }};
}

macro_rules! float_ops {
    ($t:ty, $op:expr, $inv:expr, $io:expr) => {{
        match $op {
            Op::Sum => zip::<$t>($inv, $io, |a, b| a + b),
            Op::Prod => zip::<$t>($inv, $io, |a, b| a * b),
            Op::Min => zip::<$t>($inv, $io, |a, b| if b < a { b } else { a }),
            Op::Max => zip::<$t>($inv, $io, |a, b| if b > a { b } else { a }),
            _ => return Err(err::OP),
        }
        Ok(())
    }};
}

/// `inout[i] = inv[i] (op) inout[i]` for every element of type `num`.
/// Errors with `MPI_ERR_OP` when the operation is not defined on it.
pub(crate) fn reduce(
    op: Op,
    num: Num,
    size: usize,
    inv: &[u8],
    inout: &mut [u8],
) -> Result<(), i32> {
    match op {
        Op::Nothing => return Ok(()),
        Op::Replace => {
            let n = inv.len().min(inout.len());
            inout[..n].copy_from_slice(&inv[..n]);
            return Ok(());
        }
        _ => {}
    }
    match num {
        Num::I8 => int_ops!(i8, op, inv, inout),
        Num::I16 => int_ops!(i16, op, inv, inout),
        Num::I32 => int_ops!(i32, op, inv, inout),
        Num::I64 => int_ops!(i64, op, inv, inout),
        Num::U8 => int_ops!(u8, op, inv, inout),
        Num::U16 => int_ops!(u16, op, inv, inout),
        Num::U32 => int_ops!(u32, op, inv, inout),
        Num::U64 => int_ops!(u64, op, inv, inout),
        Num::F32 => float_ops!(f32, op, inv, inout),
        Num::F64 => float_ops!(f64, op, inv, inout),
        Num::C32 => complex::<f32>(op, inv, inout),
        Num::C64 => complex::<f64>(op, inv, inout),
        Num::Pair(v, off, i) => pair(op, *v, off, *i, size, inv, inout),
        Num::Opaque => Err(err::OP),
    }
}

fn complex<
    T: Elem + std::ops::Add<Output = T> + std::ops::Sub<Output = T> + std::ops::Mul<Output = T>,
>(
    op: Op,
    inv: &[u8],
    inout: &mut [u8],
) -> Result<(), i32> {
    let n = T::N;
    for (a, b) in inv.chunks_exact(2 * n).zip(inout.chunks_exact_mut(2 * n)) {
        let (ar, ai, br, bi) = (T::get(a), T::get(&a[n..]), T::get(b), T::get(&b[n..]));
        let (r, i) = match op {
            Op::Sum => (ar + br, ai + bi),
            Op::Prod => (ar * br - ai * bi, ar * bi + ai * br),
            _ => return Err(err::OP),
        };
        r.put(b);
        i.put(&mut b[n..]);
    }
    Ok(())
}

/// MINLOC/MAXLOC on (value, index) pairs: the better value, the lower
/// index on a tie.
fn pair(
    op: Op,
    v: Num,
    off: usize,
    i: Num,
    size: usize,
    inv: &[u8],
    inout: &mut [u8],
) -> Result<(), i32> {
    let less = match op {
        Op::Minloc => true,
        Op::Maxloc => false,
        _ => return Err(err::OP),
    };
    let val = |b: &[u8]| -> f64 {
        match v {
            Num::F32 => f32::get(b) as f64,
            Num::F64 => f64::get(b),
            Num::I16 => i16::get(b) as f64,
            Num::I32 => i32::get(b) as f64,
            _ => i64::get(b) as f64,
        }
    };
    let idx = |b: &[u8]| -> f64 {
        match i {
            Num::F32 => f32::get(b) as f64,
            Num::F64 => f64::get(b),
            _ => i32::get(b) as f64,
        }
    };
    for (a, b) in inv.chunks_exact(size).zip(inout.chunks_exact_mut(size)) {
        // i64 values compare exactly, the rest fit f64.
        let better = if v == Num::I64 {
            let (x, y) = (i64::get(a), i64::get(b));
            if x == y {
                None
            } else {
                Some((x < y) == less)
            }
        } else {
            let (x, y) = (val(a), val(b));
            if x == y {
                None
            } else {
                Some((x < y) == less)
            }
        };
        let take = better.unwrap_or_else(|| idx(&a[off..]) < idx(&b[off..]));
        if take {
            b.copy_from_slice(a);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_ints_and_finds_minloc() {
        let a: Vec<u8> = [1i32, -5].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut b: Vec<u8> = [2i32, 7].iter().flat_map(|x| x.to_ne_bytes()).collect();
        reduce(Op::Sum, Num::I32, 4, &a, &mut b).unwrap();
        assert_eq!(i32::get(&b), 3);
        assert_eq!(i32::get(&b[4..]), 2);
        let t = datatype(0x22b).unwrap();
        let x: Vec<u8> = [5i32, 3].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut y: Vec<u8> = [5i32, 1].iter().flat_map(|x| x.to_ne_bytes()).collect();
        reduce(Op::Minloc, t.num, t.size, &x, &mut y).unwrap();
        assert_eq!(i32::get(&y[4..]), 1, "tie keeps the lower index");
        assert_eq!(
            reduce(Op::Band, Num::F64, 8, &[0; 8], &mut [0; 8]),
            Err(err::OP)
        );
    }
}
