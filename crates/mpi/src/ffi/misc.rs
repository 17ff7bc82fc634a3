//! Small calls: `Is_thread_main`, `Alloc_mem`/`Free_mem`,
//! `Reduce_local`, and the Fortran 90 parameterized types.

use super::collarg::reduction;
use super::{call, mk, out, recv_area, send_data, Handle};
use crate::consts::{err, h, UNDEFINED};
use crate::engine::MpiErr;
use std::ffi::{c_int, c_void};

/// `MPI_Is_thread_main`: the process's main thread, where `MPI_Init`
/// is called.
///
/// # Safety
/// `flag` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Is_thread_main(flag: *mut c_int) -> c_int {
    call("MPI_Is_thread_main", h::COMM_WORLD, || {
        // SAFETY: gettid and getpid have no preconditions.
        let main = unsafe { libc::gettid() == libc::getpid() };
        // SAFETY: the caller's contract.
        unsafe { out(flag, c_int::from(main), "flag") }
    })
}

/// `MPI_Alloc_mem`: memory from `malloc` (the info is not read).
///
/// # Safety
/// `baseptr` points to a writable pointer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alloc_mem(size: isize, _info: Handle, baseptr: *mut c_void) -> c_int {
    call("MPI_Alloc_mem", h::COMM_WORLD, || {
        let n = usize::try_from(size)
            .map_err(|_| MpiErr::new(err::SIZE, format!("invalid size {size}")))?;
        if baseptr.is_null() {
            return Err(MpiErr::new(err::ARG, "baseptr is NULL"));
        }
        // SAFETY: malloc with any size; checked for null below.
        let p = unsafe { libc::malloc(n.max(1)) };
        if p.is_null() {
            return Err(MpiErr::new(
                err::NO_MEM,
                format!("cannot allocate {n} bytes"),
            ));
        }
        // SAFETY: the caller's contract: `baseptr` is a `void **`.
        unsafe { out(baseptr.cast::<*mut c_void>(), p, "baseptr") }
    })
}

/// `MPI_Free_mem`.
///
/// # Safety
/// `base` is null or came from `MPI_Alloc_mem` and was not freed.
#[no_mangle]
pub unsafe extern "C" fn MPI_Free_mem(base: *mut c_void) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { libc::free(base) };
    err::SUCCESS
}

/// `MPI_Reduce_local`: `inout = in (op) inout`.
///
/// # Safety
/// MPI's contract for the buffers.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inout: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> c_int {
    call("MPI_Reduce_local", h::COMM_WORLD, || {
        let red = reduction(dt, op)?;
        // SAFETY: the caller's contract.
        let data = unsafe { send_data(inbuf, count, dt) }?;
        // SAFETY: the caller's contract.
        let mut area = unsafe { recv_area(inout, count, dt) }?;
        red.apply(&data, area.bytes())?;
        area.finish();
        Ok(())
    })
}

/// The predefined type a Fortran 90 `SELECTED_*_KIND(p, r)` matches.
fn f90(name: &str, p: c_int, r: c_int, kinds: &[(c_int, c_int, usize)]) -> Result<usize, MpiErr> {
    let fits = |want: c_int, have: c_int| want == UNDEFINED || (0..=have).contains(&want);
    kinds
        .iter()
        .find(|&&(kp, kr, _)| fits(p, kp) && fits(r, kr))
        .map(|k| k.2)
        .ok_or_else(|| {
            MpiErr::new(
                err::ARG,
                format!("{name}: no type with precision {p} and range {r}"),
            )
        })
}

/// (precision, decimal range, type) of REAL*4, REAL*8, REAL*16.
const REALS: [(c_int, c_int, usize); 3] = [(6, 37, 0x2d2), (15, 307, 0x2da), (33, 4931, 0x2e2)];
/// The matching COMPLEX types.
const COMPLEXES: [(c_int, c_int, usize); 3] = [(6, 37, 0x2db), (15, 307, 0x2e3), (33, 4931, 0x2eb)];
/// (unused, decimal range, type) of INTEGER*1, *2, *4, *8.
const INTEGERS: [(c_int, c_int, usize); 4] =
    [(0, 2, 0x2c1), (0, 4, 0x2c9), (0, 9, 0x2d1), (0, 18, 0x2d9)];

/// `MPI_TYPECLASS_INTEGER`, `_REAL`, `_COMPLEX`.
const TYPECLASS_INTEGER: c_int = 192;
const TYPECLASS_REAL: c_int = 193;
const TYPECLASS_COMPLEX: c_int = 194;

/// `MPI_Type_match_size`: the predefined Fortran type of a class and a
/// size in bytes (`INTEGER*n`, `REAL*n`, `COMPLEX*n`).
///
/// # Safety
/// `dt` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(class: c_int, size: c_int, dt: *mut Handle) -> c_int {
    call("MPI_Type_match_size", h::COMM_WORLD, || {
        let t = match (class, size) {
            (TYPECLASS_INTEGER, 1) => 0x2c1,
            (TYPECLASS_INTEGER, 2) => 0x2c9,
            (TYPECLASS_INTEGER, 4) => 0x2d1,
            (TYPECLASS_INTEGER, 8) => 0x2d9,
            (TYPECLASS_INTEGER, 16) => 0x2e1,
            (TYPECLASS_REAL, 4) => 0x2d2,
            (TYPECLASS_REAL, 8) => 0x2da,
            (TYPECLASS_REAL, 16) => 0x2e2,
            (TYPECLASS_COMPLEX, 8) => 0x2db,
            (TYPECLASS_COMPLEX, 16) => 0x2e3,
            (TYPECLASS_COMPLEX, 32) => 0x2eb,
            _ => {
                return Err(MpiErr::new(
                    err::ARG,
                    format!("no predefined type of class {class} and {size} bytes"),
                ))
            }
        };
        // A type this build does not carry (REAL*16 where long double is
        // not 16 bytes) is refused like an unknown one.
        crate::handles::layout(t)?;
        // SAFETY: the caller's contract.
        unsafe { out(dt, mk(t), "datatype") }
    })
}

/// `MPI_Pcontrol`: profiling levels are for tools that intercept it (by
/// its `PMPI_` name); the library itself ignores them. Declared variadic
/// in C: the extra arguments are never read.
#[no_mangle]
pub extern "C" fn MPI_Pcontrol(_level: c_int) -> c_int {
    err::SUCCESS
}

/// `MPI_Type_create_f90_real`: a predefined type (not to be freed).
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(p: c_int, r: c_int, new: *mut Handle) -> c_int {
    call("MPI_Type_create_f90_real", h::COMM_WORLD, || {
        let t = f90("MPI_Type_create_f90_real", p, r, &REALS)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(t), "newtype") }
    })
}

/// `MPI_Type_create_f90_complex`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(
    p: c_int,
    r: c_int,
    new: *mut Handle,
) -> c_int {
    call("MPI_Type_create_f90_complex", h::COMM_WORLD, || {
        let t = f90("MPI_Type_create_f90_complex", p, r, &COMPLEXES)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(t), "newtype") }
    })
}

/// `MPI_Type_create_f90_integer`.
///
/// # Safety
/// `new` is writable.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(r: c_int, new: *mut Handle) -> c_int {
    call("MPI_Type_create_f90_integer", h::COMM_WORLD, || {
        let t = f90("MPI_Type_create_f90_integer", UNDEFINED, r, &INTEGERS)?;
        // SAFETY: the caller's contract.
        unsafe { out(new, mk(t), "newtype") }
    })
}

// The profiling interface (`PMPI_…`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_misc.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f90_kinds() {
        assert_eq!(f90("r", 6, UNDEFINED, &REALS).unwrap(), 0x2d2);
        assert_eq!(f90("r", 10, 100, &REALS).unwrap(), 0x2da);
        assert_eq!(f90("r", 40, 10, &REALS).unwrap_err().class, err::ARG);
        assert_eq!(f90("i", UNDEFINED, 5, &INTEGERS).unwrap(), 0x2d1);
        assert_eq!(
            f90("i", UNDEFINED, 19, &INTEGERS).unwrap_err().class,
            err::ARG
        );
    }
}
