//! Fortran names of calls the other modules did not cover: group set
//! operations, persistent and buffered sends, matched probes, packing,
//! and `Comm_idup_with_info`, `Info_create_env`, `Session_get_info`,
//! `Aint_add`/`Aint_diff`.

use super::super::comm::MPI_Comm_idup_with_info;
use super::super::dtype::{
    MPI_Aint_add, MPI_Aint_diff, MPI_Pack, MPI_Pack_size, MPI_Type_create_indexed_block,
    MPI_Type_get_extent_x, MPI_Type_get_true_extent, MPI_Type_get_true_extent_x, MPI_Type_size_x,
    MPI_Unpack,
};
use super::super::group::{
    MPI_Comm_create_group, MPI_Group_compare, MPI_Group_difference, MPI_Group_intersection,
    MPI_Group_translate_ranks, MPI_Group_union,
};
use super::super::info::MPI_Info_create_env;
use super::super::misc::{MPI_Pcontrol, MPI_Type_match_size};
use super::super::mprobe::{MPI_Improbe, MPI_Imrecv};
use super::super::p2p::MPI_Get_elements;
use super::super::p2p::{
    MPI_Get_elements_x, MPI_Status_get_error, MPI_Status_get_source, MPI_Status_get_tag,
    MPI_Status_set_cancelled, MPI_Status_set_elements, MPI_Status_set_elements_x,
    MPI_Status_set_error, MPI_Status_set_source, MPI_Status_set_tag,
};
use super::super::requests::{
    MPI_Bsend_init, MPI_Ibsend, MPI_Irsend, MPI_Request_get_status, MPI_Rsend_init, MPI_Send_init,
    MPI_Ssend_init,
};
use super::super::session::MPI_Session_get_info;
use super::super::topo::{MPI_Cart_map, MPI_Graph_map};
use super::{fortran, get, get_aint, set, with_handle, Fint};

fortran!(
    /// `MPI_GROUP_UNION`.
    mpi_group_union_ => MPI_Group_union; a: h, b: h, new: o);
fortran!(
    /// `MPI_GROUP_INTERSECTION`.
    mpi_group_intersection_ => MPI_Group_intersection; a: h, b: h, new: o);
fortran!(
    /// `MPI_GROUP_DIFFERENCE`.
    mpi_group_difference_ => MPI_Group_difference; a: h, b: h, new: o);
fortran!(
    /// `MPI_GROUP_COMPARE`.
    mpi_group_compare_ => MPI_Group_compare; a: h, b: h, result: p);
fortran!(
    /// `MPI_GROUP_TRANSLATE_RANKS`.
    mpi_group_translate_ranks_ => MPI_Group_translate_ranks; a: h, n: v, r1: p, b: h, r2: p);
fortran!(
    /// `MPI_COMM_CREATE_GROUP`.
    mpi_comm_create_group_ => MPI_Comm_create_group; comm: h, g: h, tag: v, new: o);
fortran!(
    /// `MPI_SEND_INIT`.
    mpi_send_init_ => MPI_Send_init; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_SSEND_INIT`.
    mpi_ssend_init_ => MPI_Ssend_init; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_BSEND_INIT`.
    mpi_bsend_init_ => MPI_Bsend_init; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_RSEND_INIT`.
    mpi_rsend_init_ => MPI_Rsend_init; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_IBSEND`.
    mpi_ibsend_ => MPI_Ibsend; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_IRSEND`.
    mpi_irsend_ => MPI_Irsend; b: b, count: v, dt: h, dest: v, tag: v, comm: h, req: o);
fortran!(
    /// `MPI_IMPROBE`.
    mpi_improbe_ => MPI_Improbe; source: v, tag: v, comm: h, flag: p, msg: o, st: s);
fortran!(
    /// `MPI_IMRECV`.
    mpi_imrecv_ => MPI_Imrecv; b: b, count: v, dt: h, msg: i, req: o);
fortran!(
    /// `MPI_REQUEST_GET_STATUS`.
    mpi_request_get_status_ => MPI_Request_get_status; req: h, flag: p, st: s);
fortran!(
    /// `MPI_GET_ELEMENTS`.
    mpi_get_elements_ => MPI_Get_elements; st: s, dt: h, count: p);
fortran!(
    /// `MPI_GET_ELEMENTS_X` (`INTEGER(KIND=MPI_COUNT_KIND)`).
    mpi_get_elements_x_ => MPI_Get_elements_x; st: s, dt: h, count: c);
fortran!(
    /// `MPI_TYPE_SIZE_X`.
    mpi_type_size_x_ => MPI_Type_size_x; dt: h, size: c);
fortran!(
    /// `MPI_TYPE_GET_EXTENT_X`.
    mpi_type_get_extent_x_ => MPI_Type_get_extent_x; dt: h, lb: c, extent: c);
fortran!(
    /// `MPI_TYPE_GET_TRUE_EXTENT_X`.
    mpi_type_get_true_extent_x_ => MPI_Type_get_true_extent_x; dt: h, lb: c, extent: c);
fortran!(
    /// `MPI_STATUS_SET_ELEMENTS`.
    mpi_status_set_elements_ => MPI_Status_set_elements; st: s, dt: h, count: v);
fortran!(
    /// `MPI_STATUS_SET_ELEMENTS_X`.
    mpi_status_set_elements_x_ => MPI_Status_set_elements_x; st: s, dt: h, count: x);
fortran!(
    /// `MPI_STATUS_GET_SOURCE`.
    mpi_status_get_source_ => MPI_Status_get_source; st: s, v: p);
fortran!(
    /// `MPI_STATUS_SET_SOURCE`.
    mpi_status_set_source_ => MPI_Status_set_source; st: s, v: v);
fortran!(
    /// `MPI_STATUS_GET_TAG`.
    mpi_status_get_tag_ => MPI_Status_get_tag; st: s, v: p);
fortran!(
    /// `MPI_STATUS_SET_TAG`.
    mpi_status_set_tag_ => MPI_Status_set_tag; st: s, v: v);
fortran!(
    /// `MPI_STATUS_GET_ERROR`.
    mpi_status_get_error_ => MPI_Status_get_error; st: s, v: p);
fortran!(
    /// `MPI_STATUS_SET_ERROR`.
    mpi_status_set_error_ => MPI_Status_set_error; st: s, v: v);
fortran!(
    /// `MPI_TYPE_MATCH_SIZE`.
    mpi_type_match_size_ => MPI_Type_match_size; class: v, size: v, dt: o);
fortran!(
    /// `MPI_CART_MAP`.
    mpi_cart_map_ => MPI_Cart_map; comm: h, nd: v, dims: p, periods: p, newrank: p);
fortran!(
    /// `MPI_GRAPH_MAP`.
    mpi_graph_map_ => MPI_Graph_map; comm: h, n: v, index: p, edges: p, newrank: p);

/// `MPI_PCONTROL` (the level is ignored, as in C).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_pcontrol_(level: *const Fint, ierr: *mut Fint) {
    // SAFETY: Fortran references.
    unsafe { set(ierr, MPI_Pcontrol(get(level))) };
}
fortran!(
    /// `MPI_STATUS_SET_CANCELLED`.
    mpi_status_set_cancelled_ => MPI_Status_set_cancelled; st: s, flag: v);
fortran!(
    /// `MPI_TYPE_CREATE_INDEXED_BLOCK`.
    mpi_type_create_indexed_block_ => MPI_Type_create_indexed_block;
    count: v, bl: v, displs: p, old: h, new: o);
fortran!(
    /// `MPI_TYPE_GET_TRUE_EXTENT`.
    mpi_type_get_true_extent_ => MPI_Type_get_true_extent; dt: h, lb: q, extent: q);
fortran!(
    /// `MPI_PACK`.
    mpi_pack_ => MPI_Pack; ib: b, count: v, dt: h, ob: b, size: v, pos: p, comm: h);
fortran!(
    /// `MPI_UNPACK`.
    mpi_unpack_ => MPI_Unpack; ib: b, size: v, pos: p, ob: b, count: v, dt: h, comm: h);
fortran!(
    /// `MPI_PACK_SIZE`.
    mpi_pack_size_ => MPI_Pack_size; count: v, dt: h, comm: h, size: p);
fortran!(
    /// `MPI_COMM_IDUP_WITH_INFO`.
    mpi_comm_idup_with_info_ => MPI_Comm_idup_with_info; comm: h, info: h, new: o, req: o);
fortran!(
    /// `MPI_SESSION_GET_INFO`.
    mpi_session_get_info_ => MPI_Session_get_info; s: h, info: o);

/// `MPI_INFO_CREATE_ENV` (Fortran passes no arguments of the program).
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_info_create_env_(info: *mut Fint, ierr: *mut Fint) {
    // SAFETY: Fortran references; argc/argv are not read.
    unsafe {
        let r = with_handle(info, |i| MPI_Info_create_env(0, std::ptr::null_mut(), i));
        set(ierr, r);
    }
}

/// `MPI_AINT_ADD`, a function.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_aint_add_(base: *const i64, disp: *const i64) -> i64 {
    // SAFETY: Fortran references.
    unsafe { MPI_Aint_add(get_aint(base), get_aint(disp)) as i64 }
}

/// `MPI_AINT_DIFF`, a function.
///
/// # Safety
/// Fortran references.
#[no_mangle]
pub unsafe extern "C" fn mpi_aint_diff_(a: *const i64, b: *const i64) -> i64 {
    // SAFETY: Fortran references.
    unsafe { MPI_Aint_diff(get_aint(a), get_aint(b)) as i64 }
}

// The profiling interface (`pmpi_…_`) of the functions above (build.rs).
include!(concat!(env!("OUT_DIR"), "/pmpi_fortran_extra.rs"));
