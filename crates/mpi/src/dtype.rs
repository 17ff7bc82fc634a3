//! Datatypes as layouts: every datatype, predefined or derived, is
//! flattened once (at construction) into the byte blocks of one element
//! in type-map order, so sends pack and receives unpack with a list of
//! copies and everything else moves packed bytes.

use crate::consts::err;
use crate::objects::MpiErr;
use crate::types::{datatype, Datatype, Num};
use std::sync::{Arc, OnceLock};

/// Most blocks one datatype may flatten to: a bound on what a type
/// constructor allocates.
pub(crate) const MAX_BLOCKS: usize = 1 << 22;

/// `MPI_COMBINER_*` of the standard ABI.
pub(crate) mod combiner {
    pub const NAMED: i32 = 101;
    pub const DUP: i32 = 102;
    pub const CONTIGUOUS: i32 = 103;
    pub const VECTOR: i32 = 104;
    pub const HVECTOR: i32 = 105;
    pub const INDEXED: i32 = 106;
    pub const HINDEXED: i32 = 107;
    pub const INDEXED_BLOCK: i32 = 108;
    pub const HINDEXED_BLOCK: i32 = 109;
    pub const STRUCT: i32 = 110;
    pub const SUBARRAY: i32 = 111;
    pub const RESIZED: i32 = 116;
}

/// `MPI_ORDER_C` and `MPI_ORDER_FORTRAN`.
pub(crate) const ORDER_C: i32 = 12;
pub(crate) const ORDER_FORTRAN: i32 = 15;

/// How a datatype was made, for `MPI_Type_get_envelope/get_contents`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Envelope {
    pub combiner: i32,
    pub ints: Vec<i32>,
    pub aints: Vec<isize>,
    pub types: Vec<usize>,
}

/// One datatype, flattened.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// Data bytes of one element.
    pub size: usize,
    pub lb: isize,
    pub extent: isize,
    pub true_lb: isize,
    pub true_ub: isize,
    /// (offset from the element's address, length), in type-map order,
    /// adjacent blocks merged.
    pub blocks: Vec<(isize, usize)>,
    /// The one predefined type every basic element is, if any.
    pub base: Option<Datatype>,
    /// Runs of basic elements in packed order: (bytes, basic size).
    pub runs: Vec<(usize, usize)>,
    /// Alignment of the strictest basic element (pads struct extents).
    pub align: usize,
    /// Bounds set by `MPI_Type_create_resized` (no alignment padding).
    pub sticky: bool,
    pub committed: bool,
    pub name: String,
    pub env: Envelope,
}

impl Layout {
    /// One element is `size` bytes at its address with no gaps: a buffer
    /// of such elements is its own packed form.
    pub(crate) fn contiguous(&self) -> bool {
        self.extent == self.size as isize
            && (self.size == 0 || (self.blocks.len() == 1 && self.blocks[0].0 == 0))
    }

    /// Basic elements in `bytes` packed bytes, or None when they end
    /// inside one (`MPI_Get_elements`).
    pub(crate) fn elements(&self, bytes: usize) -> Option<usize> {
        let per: usize = self.runs.iter().map(|&(b, s)| b / s.max(1)).sum();
        if self.size == 0 {
            return Some(0);
        }
        let (full, mut rem) = (bytes / self.size, bytes % self.size);
        let mut n = full.checked_mul(per)?;
        for &(b, s) in &self.runs {
            if rem == 0 {
                break;
            }
            let take = rem.min(b);
            if take % s.max(1) != 0 {
                return None;
            }
            n = n.checked_add(take / s.max(1))?;
            rem -= take;
        }
        Some(n)
    }

    /// Packed bytes holding `n` basic elements, the last element type
    /// filled first to last (`MPI_Status_set_elements`: what
    /// [`Layout::elements`] turns back into `n`); None on overflow or
    /// when the type holds no element but `n` is not 0.
    pub(crate) fn bytes_of_elements(&self, n: usize) -> Option<usize> {
        let per: usize = self.runs.iter().map(|&(b, s)| b / s.max(1)).sum();
        if per == 0 {
            return (n == 0).then_some(0);
        }
        let (full, mut rem) = (n / per, n % per);
        let mut bytes = full.checked_mul(self.size)?;
        for &(b, s) in &self.runs {
            if rem == 0 {
                break;
            }
            let s = s.max(1);
            let take = rem.min(b / s);
            bytes = bytes.checked_add(take * s)?;
            rem -= take;
        }
        Some(bytes)
    }

    fn predefined(t: Datatype) -> Layout {
        let align = match t.num {
            Num::Pair(v, _, _) => pair_align(v),
            Num::C32 => 4,
            Num::C64 => 8,
            _ if t.size.is_power_of_two() => t.size.min(16),
            _ => 8,
        };
        Layout {
            size: t.size,
            lb: 0,
            extent: t.size as isize,
            true_lb: 0,
            true_ub: t.size as isize,
            blocks: vec![(0, t.size)],
            base: Some(t),
            runs: vec![(t.size, t.size)],
            align,
            sticky: false,
            committed: true,
            name: t.name.to_string(),
            env: Envelope {
                combiner: combiner::NAMED,
                ..Envelope::default()
            },
        }
    }
}

fn pair_align(v: &Num) -> usize {
    match v {
        Num::F64 | Num::I64 => 8,
        _ => 4,
    }
}

/// The layout of predefined datatype handle `h`, built once.
pub(crate) fn predefined(h: usize) -> Option<&'static Arc<Layout>> {
    static TABLE: OnceLock<Vec<Option<Arc<Layout>>>> = OnceLock::new();
    let t = TABLE.get_or_init(|| {
        (0x200..0x300)
            .map(|h| datatype(h).map(|d| Arc::new(Layout::predefined(d))))
            .collect()
    });
    h.checked_sub(0x200)
        .and_then(|i| t.get(i))
        .and_then(Option::as_ref)
}

fn too_big() -> MpiErr {
    MpiErr::new(err::COUNT, "datatype too large")
}

/// Builds a layout by placing copies of old types at byte displacements.
struct Builder {
    l: Layout,
    first: bool,
    base_mixed: bool,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            l: Layout {
                size: 0,
                lb: 0,
                extent: 0,
                true_lb: 0,
                true_ub: 0,
                blocks: Vec::new(),
                base: None,
                runs: Vec::new(),
                align: 1,
                sticky: false,
                committed: false,
                name: String::new(),
                env: Envelope::default(),
            },
            first: true,
            base_mixed: false,
        }
    }

    /// `count` consecutive copies of `old` starting `at` bytes.
    fn place(&mut self, old: &Layout, count: usize, at: isize) -> Result<(), MpiErr> {
        if count == 0 {
            return Ok(());
        }
        let l = &mut self.l;
        let span = old
            .extent
            .checked_mul(count as isize - 1)
            .ok_or_else(too_big)?;
        let (lo, hi) = if span >= 0 { (0, span) } else { (span, 0) };
        let lb = old
            .lb
            .checked_add(lo)
            .and_then(|x| x.checked_add(at))
            .ok_or_else(too_big)?;
        let ub = old
            .lb
            .checked_add(old.extent)
            .and_then(|x| x.checked_add(hi))
            .and_then(|x| x.checked_add(at))
            .ok_or_else(too_big)?;
        // Every block offset below lies between these two.
        let tlb = at
            .checked_add(old.true_lb)
            .and_then(|x| x.checked_add(lo))
            .ok_or_else(too_big)?;
        let tub = at
            .checked_add(old.true_ub)
            .and_then(|x| x.checked_add(hi))
            .ok_or_else(too_big)?;
        if self.first {
            let ext = ub.checked_sub(lb).ok_or_else(too_big)?;
            (l.lb, l.extent) = (lb, ext);
        } else {
            let ub0 = l.lb + l.extent;
            l.lb = l.lb.min(lb);
            l.extent = ub0.max(ub).checked_sub(l.lb).ok_or_else(too_big)?;
        }
        // Data bounds and the base type come from copies holding data.
        if self.first || (l.size == 0 && old.size > 0) {
            (l.true_lb, l.true_ub, l.base) = (tlb, tub, old.base);
        } else if old.size > 0 {
            l.true_lb = l.true_lb.min(tlb);
            l.true_ub = l.true_ub.max(tub);
            if old.base.map(|b| b.name) != l.base.map(|b| b.name) {
                self.base_mixed = true;
            }
        }
        self.first = false;
        l.align = l.align.max(old.align);
        l.sticky |= old.sticky;
        let added = old.size.checked_mul(count).ok_or_else(too_big)?;
        l.size = l.size.checked_add(added).ok_or_else(too_big)?;
        if l.size > isize::MAX as usize {
            return Err(too_big());
        }
        let too_many = |adding: usize, have: usize| {
            if adding.saturating_add(have) > MAX_BLOCKS {
                return Err(MpiErr::new(
                    err::NO_MEM,
                    format!("datatype of more than {MAX_BLOCKS} blocks"),
                ));
            }
            Ok(())
        };
        // Copies of a gapless type make one block, of one run one run:
        // no per-copy work (large contiguous types are common).
        match old.blocks.as_slice() {
            [(o, n)] if *n as isize == old.extent => {
                too_many(1, l.blocks.len())?;
                push_block(&mut l.blocks, at + o, added);
            }
            _ => {
                too_many(old.blocks.len().saturating_mul(count), l.blocks.len())?;
                for k in 0..count as isize {
                    let d = at + k * old.extent;
                    for &(o, n) in &old.blocks {
                        push_block(&mut l.blocks, d + o, n);
                    }
                }
            }
        }
        match old.runs.as_slice() {
            [(b, s)] => push_run(&mut l.runs, b * count, *s),
            _ => {
                too_many(old.runs.len().saturating_mul(count), l.runs.len())?;
                for _ in 0..count {
                    for &(b, s) in &old.runs {
                        push_run(&mut l.runs, b, s);
                    }
                }
            }
        }
        Ok(())
    }

    fn finish(mut self, env: Envelope) -> Layout {
        if self.base_mixed {
            self.l.base = None;
        }
        self.l.env = env;
        self.l
    }
}

fn push_run(runs: &mut Vec<(usize, usize)>, bytes: usize, size: usize) {
    if bytes == 0 {
        return;
    }
    match runs.last_mut() {
        Some((b, s)) if *s == size => *b += bytes,
        _ => runs.push((bytes, size)),
    }
}

fn push_block(blocks: &mut Vec<(isize, usize)>, off: isize, n: usize) {
    if n == 0 {
        return;
    }
    match blocks.last_mut() {
        Some((o, l)) if *o + *l as isize == off => *l += n,
        _ => blocks.push((off, n)),
    }
}

fn count(c: i64, what: &str) -> Result<usize, MpiErr> {
    usize::try_from(c).map_err(|_| MpiErr::new(err::COUNT, format!("negative {what} {c}")))
}

/// `MPI_Type_create_hvector` (and, with a stride in elements times the
/// extent, `vector` and `contiguous`).
pub(crate) fn hvector(
    n: i64,
    bl: i64,
    stride: isize,
    old: &Layout,
    env: Envelope,
) -> Result<Layout, MpiErr> {
    let (n, bl) = (count(n, "count")?, count(bl, "block length")?);
    let mut b = Builder::new();
    for i in 0..n as isize {
        b.place(old, bl, i.checked_mul(stride).ok_or_else(too_big)?)?;
    }
    Ok(b.finish(env))
}

/// `MPI_Type_create_hindexed` (and `indexed`, `*_block`): blocks of
/// `bls[i]` old elements at byte displacement `displs[i]`.
pub(crate) fn hindexed(
    bls: &[i64],
    displs: &[isize],
    old: &Layout,
    env: Envelope,
) -> Result<Layout, MpiErr> {
    let mut b = Builder::new();
    for (&bl, &d) in bls.iter().zip(displs) {
        b.place(old, count(bl, "block length")?, d)?;
    }
    Ok(b.finish(env))
}

/// `MPI_Type_create_struct`; the extent is padded to the strictest
/// alignment of the members, as C pads a struct.
pub(crate) fn structure(
    bls: &[i64],
    displs: &[isize],
    olds: &[Arc<Layout>],
    env: Envelope,
) -> Result<Layout, MpiErr> {
    let mut b = Builder::new();
    for ((&bl, &d), old) in bls.iter().zip(displs).zip(olds) {
        b.place(old, count(bl, "block length")?, d)?;
    }
    let mut l = b.finish(env);
    if !l.sticky {
        let a = l.align.max(1) as isize;
        l.extent = (l.extent + a - 1) / a * a;
    }
    Ok(l)
}

/// `MPI_Type_create_subarray`.
pub(crate) fn subarray(
    sizes: &[i64],
    subs: &[i64],
    starts: &[i64],
    order: i32,
    old: &Layout,
    env: Envelope,
) -> Result<Layout, MpiErr> {
    let nd = sizes.len();
    if nd == 0 || subs.len() != nd || starts.len() != nd {
        return Err(MpiErr::new(
            err::ARG,
            "subarray needs at least one dimension",
        ));
    }
    for d in 0..nd {
        if sizes[d] < 1 || subs[d] < 1 || starts[d] < 0 || starts[d] + subs[d] > sizes[d] {
            return Err(MpiErr::new(
                err::ARG,
                format!(
                    "dimension {d}: size {}, subsize {}, start {} do not fit",
                    sizes[d], subs[d], starts[d]
                ),
            ));
        }
    }
    // Dimensions from the fastest varying one.
    let dims: Vec<usize> = match order {
        ORDER_C => (0..nd).rev().collect(),
        ORDER_FORTRAN => (0..nd).collect(),
        _ => return Err(MpiErr::new(err::ARG, format!("invalid order {order}"))),
    };
    let mut stride = vec![0isize; nd];
    let mut s: isize = old.extent;
    for &d in &dims {
        stride[d] = s;
        s = s.checked_mul(sizes[d] as isize).ok_or_else(too_big)?;
    }
    let total = s;
    let fast = dims[0];
    // One placement per row: bound them before looping.
    dims[1..]
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(subs[d] as usize))
        .filter(|&r| r <= MAX_BLOCKS)
        .ok_or_else(|| {
            MpiErr::new(
                err::NO_MEM,
                format!("subarray of more than {MAX_BLOCKS} rows"),
            )
        })?;
    let mut b = Builder::new();
    let mut idx = vec![0i64; nd];
    loop {
        let mut at: isize = stride[fast] * starts[fast] as isize;
        for &d in &dims[1..] {
            at += stride[d] * (starts[d] + idx[d]) as isize;
        }
        b.place(old, subs[fast] as usize, at)?;
        // Next index of the outer dimensions, fastest first.
        let mut k = 1;
        while k < nd {
            let d = dims[k];
            idx[d] += 1;
            if idx[d] < subs[d] {
                break;
            }
            idx[d] = 0;
            k += 1;
        }
        if k == nd {
            break;
        }
    }
    let mut l = b.finish(env);
    l.lb = 0;
    l.extent = total;
    l.sticky = true;
    Ok(l)
}

/// `MPI_Type_create_resized`.
pub(crate) fn resized(old: &Layout, lb: isize, extent: isize, env: Envelope) -> Layout {
    let mut l = old.clone();
    l.lb = lb;
    l.extent = extent;
    l.sticky = true;
    l.committed = false;
    l.name.clear();
    l.env = env;
    l
}

/// The range of addresses, relative to element 0, that `count`
/// elements touch: (lowest, length).
pub(crate) fn span(l: &Layout, count: usize) -> Option<(isize, usize)> {
    if count == 0 || l.size == 0 {
        return Some((0, 0));
    }
    let last = l.extent.checked_mul(isize::try_from(count).ok()? - 1)?;
    let lo = l.true_lb.checked_add(last.min(0))?;
    let hi = l.true_ub.checked_add(last.max(0))?;
    Some((lo, usize::try_from(hi.checked_sub(lo)?).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Arc<Layout> {
        predefined(0x209).unwrap().clone()
    }

    #[test]
    fn vector_and_subarray_flatten() {
        let v = hvector(3, 2, 16, &int(), Envelope::default()).unwrap();
        assert_eq!(v.blocks, vec![(0, 8), (16, 8), (32, 8)]);
        assert_eq!((v.size, v.lb, v.extent), (24, 0, 40));
        assert!(!v.contiguous());
        let c = hvector(4, 1, 4, &int(), Envelope::default()).unwrap();
        assert!(c.contiguous());
        // 4x5 ints, the 2x3 block from (1, 1), C order.
        let s = subarray(
            &[4, 5],
            &[2, 3],
            &[1, 1],
            ORDER_C,
            &int(),
            Envelope::default(),
        )
        .unwrap();
        assert_eq!(s.blocks, vec![(24, 12), (44, 12)]);
        assert_eq!(s.extent, 80);
        assert_eq!(s.elements(20), Some(5));
        assert_eq!(s.elements(22), None);
    }

    #[test]
    fn elements_and_their_bytes_are_inverse() {
        // A struct of a double then an int: 12 packed bytes, 2 elements.
        let d = predefined(0x214).unwrap().clone();
        let s = structure(&[1, 1], &[0, 8], &[d, int()], Envelope::default()).unwrap();
        for n in 0..9 {
            let b = s.bytes_of_elements(n).unwrap();
            assert_eq!(s.elements(b), Some(n), "{n} elements in {b} bytes");
        }
        assert_eq!(s.bytes_of_elements(3), Some(20));
        assert_eq!(s.bytes_of_elements(usize::MAX), None);
        let empty = hvector(1, 0, 0, &int(), Envelope::default()).unwrap();
        assert_eq!(empty.bytes_of_elements(0), Some(0));
        assert_eq!(empty.bytes_of_elements(1), None);
    }

    #[test]
    fn struct_extent_is_padded() {
        let d = predefined(0x214).unwrap().clone();
        let s = structure(&[1, 1], &[0, 8], &[d, int()], Envelope::default()).unwrap();
        assert_eq!((s.size, s.extent), (12, 16));
        assert!(s.base.is_none());
        assert!(hvector(i64::from(i32::MAX), 1, 1 << 40, &int(), Envelope::default()).is_err());
        // An empty member does not make a struct of doubles mixed.
        let empty = Arc::new(hvector(1, 0, 0, &int(), Envelope::default()).unwrap());
        let dbl = predefined(0x214).unwrap().clone();
        let one = structure(&[1, 2], &[0, 8], &[empty, dbl], Envelope::default()).unwrap();
        assert_eq!(one.base.map(|b| b.name), Some("MPI_DOUBLE"));
        assert_eq!((one.true_lb, one.true_ub, one.size), (8, 24, 16));
        // Displacements at the ends of the address space are refused, not
        // wrapped.
        let far = hindexed(
            &[1, 1],
            &[isize::MIN + 2, isize::MAX - 2],
            &int(),
            Envelope::default(),
        );
        assert_eq!(far.map(|_| ()).unwrap_err().class, err::COUNT);
        // A huge gapless type is one block.
        let big = hvector(1, 1 << 30, 0, &int(), Envelope::default()).unwrap();
        assert_eq!((big.blocks.len(), big.runs.len()), (1, 1));
        assert!(big.contiguous());
        let holes = hvector(1 << 30, 1, 8, &int(), Envelope::default());
        assert_eq!(holes.map(|_| ()).unwrap_err().class, err::NO_MEM);
    }
}
