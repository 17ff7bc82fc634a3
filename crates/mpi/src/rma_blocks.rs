//! One-sided operations on derived datatypes: the origin's and the
//! target's type maps walked side by side, cut into pieces contiguous on
//! both sides. Each piece becomes one MBCF WRITE or READ straight between
//! the origin's memory and the target's, with no packing.

use crate::consts::err;
use crate::dtype::Layout;
use crate::engine::MpiErr;

/// At most this many pieces per call: a request past it is refused with
/// `MPI_ERR_COUNT` instead of growing without bound.
const MAX_PIECES: usize = 1 << 20;

/// A piece: origin offset, target offset, length in bytes.
pub(crate) type Piece = (i64, i64, usize);

/// The blocks of `count` elements of `l`, as (byte offset from the
/// buffer's start, length), adjacent ones merged.
fn blocks(l: &Layout, count: usize) -> impl Iterator<Item = (i64, usize)> + '_ {
    (0..count).flat_map(move |k| {
        let base = k as i64 * l.extent as i64;
        l.blocks
            .iter()
            .filter(|b| b.1 > 0)
            .map(move |&(off, len)| (base + off as i64, len))
    })
}

/// The pieces of an operation moving `count` elements of `o` at the
/// origin to `tcount` of `t` at the target (the same number of bytes):
/// (origin offset, target offset, length), in type-map order.
pub(crate) fn pieces(
    o: &Layout,
    ocount: usize,
    t: &Layout,
    tcount: usize,
) -> Result<Vec<Piece>, MpiErr> {
    let mut out: Vec<Piece> = Vec::new();
    let mut ob = blocks(o, ocount);
    let mut tb = blocks(t, tcount);
    let (mut oc, mut tc) = (ob.next(), tb.next());
    while let (Some((op, ol)), Some((tp, tl))) = (oc, tc) {
        let n = ol.min(tl);
        match out.last_mut() {
            Some(last) if last.0 + last.2 as i64 == op && last.1 + last.2 as i64 == tp => {
                last.2 += n;
            }
            _ => {
                if out.len() == MAX_PIECES {
                    return Err(MpiErr::new(
                        err::COUNT,
                        format!("one-sided operation of more than {MAX_PIECES} pieces"),
                    ));
                }
                out.push((op, tp, n));
            }
        }
        oc = if ol > n {
            Some((op + n as i64, ol - n))
        } else {
            ob.next()
        };
        tc = if tl > n {
            Some((tp + n as i64, tl - n))
        } else {
            tb.next()
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::{hvector, predefined, Envelope};

    /// `MPI_DOUBLE` (handle 0x214 in the standard ABI).
    fn double() -> Layout {
        (**predefined(0x214).expect("MPI_DOUBLE")).clone()
    }

    #[test]
    fn contiguous_on_both_sides_is_one_piece() {
        let d = double();
        assert_eq!(pieces(&d, 8, &d, 8).unwrap(), vec![(0, 0, 64)]);
    }

    #[test]
    fn a_strided_target_is_cut_per_block() {
        let d = double();
        // Two doubles every four.
        let v = hvector(3, 2, 32, &d, Envelope::default()).unwrap();
        assert_eq!(
            pieces(&d, 6, &v, 1).unwrap(),
            vec![(0, 0, 16), (16, 32, 16), (32, 64, 16)]
        );
        // Both strided, differently: cut where either side breaks.
        let w = hvector(2, 3, 40, &d, Envelope::default()).unwrap();
        assert_eq!(
            pieces(&w, 1, &v, 1).unwrap(),
            vec![(0, 0, 16), (16, 32, 8), (40, 40, 8), (48, 64, 16)]
        );
    }
}
